"""Image folders under the data roots: ImageFolder trees and torchvision dataset classes.

An ImageFolder tree has one sub-folder per class (sorted names = class indices, as in torchvision, so an
ImageNet ``val`` folder of synsets lines up with ImageNet-1k logits). Every file is checked to stay
inside the root, so a symlink planted in the tree cannot read elsewhere.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from zootriage.core.data.images import SUFFIX_FORMATS, FileLoader, ImageSet, Picture
from zootriage.core.data.roots import ensure_inside, resolve_under_roots
from zootriage.core.errors import ArchiveTooLarge, BadSampling, UnknownDataset

if TYPE_CHECKING:
    import torchvision.datasets

    from zootriage.core.data.archives import ArchiveLimits  # archives imports this module

# torchvision dataset classes that read a local folder with (root, train|split, download) alone and
# expose their labels; any other class (LSUN needs an extra module, CelebA has no single label) is refused.
TORCHVISION_CLASSES = (
    "CIFAR10", "CIFAR100", "FashionMNIST", "ImageNet", "KMNIST", "MNIST", "STL10", "SVHN", "USPS"
)
IMAGE_SUFFIXES = set(SUFFIX_FORMATS)  # the suffixes ``decode`` opens, each as its own format


class _Walk:
    """Entries of a folder tree, counted as they are listed: a tree over the archive limits (images,
    classes, or entries of any kind, as an archive's members) is refused before it is all listed."""

    def __init__(self, where: str, limits: ArchiveLimits) -> None:
        self.where = where
        self.limits = limits
        self.max_images = limits.max_folder_images
        self.max_entries = 2 * self.max_images + 16  # images and their folders, as an archive's members
        self.entries = 0
        self.images = 0

    def _count(self, n: int) -> None:
        self.entries += n
        if self.entries > self.max_entries:
            raise ArchiveTooLarge(
                f"{self.where!r}: over {self.max_entries} files and folders (the limit for "
                f"{self.max_images} images)"
            )

    def class_dirs(self, folder: Path) -> list[Path]:
        dirs = []
        with os.scandir(folder) as entries:
            for entry in entries:
                self._count(1)
                if entry.is_dir():
                    dirs.append(Path(entry.path))
                    if len(dirs) > self.limits.max_classes:
                        raise ArchiveTooLarge(
                            f"{self.where!r}: over the {self.limits.max_classes}-class limit"
                        )
        return sorted(dirs)

    def images_under(self, class_dir: Path) -> Iterator[Path]:
        """Image files at any depth, one entry at a time (symlinked folders are not followed, as with
        ``rglob``; unreadable folders are skipped)."""
        pending = [class_dir]
        while pending:
            try:
                entries = os.scandir(pending.pop())
            except OSError:
                continue
            with entries:
                for entry in entries:
                    self._count(1)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(Path(entry.path))
                    elif os.path.splitext(entry.name)[1].lower() in IMAGE_SUFFIXES:
                        self.images += 1
                        if self.images > self.max_images:
                            raise ArchiveTooLarge(f"{self.where!r}: over the {self.max_images}-image limit")
                        yield Path(entry.path)


def open_folder(
    relative: str, split: str | None, roots: list[Path], label_space: str | None, limits: ArchiveLimits
) -> ImageSet:
    """The ImageFolder tree at ``relative`` (its ``split`` sub-folder when a split is named), listed
    within ``limits`` (images, classes, entries) before any file is sorted or resolved."""
    where = f"{relative}/{split}" if split else relative
    folder, root = resolve_under_roots(where, roots)
    if not folder.is_dir():
        raise UnknownDataset(f"{where!r} is not a folder")
    walk = _Walk(where, limits)
    class_dirs = walk.class_dirs(folder)
    for class_dir in class_dirs:  # before listing them: a symlinked class must not lead outside
        ensure_inside(class_dir, root, f"{where}/{class_dir.name}")
    listed = [list(walk.images_under(class_dir)) for class_dir in class_dirs]
    paths: list[Path] = []
    labels: list[int] = []
    for label, files in enumerate(listed):
        for file in sorted(files):
            paths.append(ensure_inside(file, root, f"{where}/{file.relative_to(folder)}"))
            labels.append(label)
    if not paths:
        raise UnknownDataset(f"{where!r} holds no images in class sub-folders")
    loader = FileLoader(tuple(paths), limits.max_pixels)
    identity = {"folder": where, "files": len(paths)}
    classes = tuple(d.name for d in class_dirs)
    return ImageSet(np.array(labels, dtype=np.int64), classes, label_space, identity, loader, loader.read)


class TorchvisionLoader:
    """Image ``i`` of a torchvision dataset class, built lazily once per process (workers included)."""

    def __init__(self, name: str, kwargs: dict[str, Any]) -> None:
        self.name = name
        self.kwargs = kwargs
        self._dataset: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_dataset": None}

    def dataset(self) -> Any:
        if self._dataset is None:
            self._dataset = torchvision_class(self.name)(**self.kwargs)
        return self._dataset

    def __call__(self, index: int) -> Picture:
        image: Picture = self.dataset()[index][0]
        return image


def check_torchvision_name(name: str) -> None:
    """``UnknownDataset`` unless ``name`` is a supported torchvision dataset class (by name alone:
    torchvision is not imported)."""
    if name not in TORCHVISION_CLASSES:
        supported = ", ".join(TORCHVISION_CLASSES)
        raise UnknownDataset(f"torchvision has no supported dataset class {name!r} (supported: {supported})")


def torchvision_class(name: str) -> type[torchvision.datasets.VisionDataset]:
    """The supported torchvision dataset class ``name``, or ``UnknownDataset``."""
    check_torchvision_name(name)
    import torchvision.datasets  # here, not at the top: a worker's own process never needs torchvision

    cls: type[torchvision.datasets.VisionDataset] = getattr(torchvision.datasets, name)
    return cls


def open_torchvision(
    name: str, relative: str, split: str | None, roots: list[Path], label_space: str | None
) -> ImageSet:
    """A torchvision dataset class reading ``relative`` under a root, never downloading."""
    cls = torchvision_class(name)
    folder, _ = resolve_under_roots(relative, roots)
    params = inspect.signature(cls).parameters
    kwargs: dict[str, Any] = {"root": str(folder)}
    if "download" in params:
        kwargs["download"] = False
    if "train" in params:
        if split not in (None, "train", "test"):
            raise BadSampling(f"{name} has splits train and test, not {split!r}")
        kwargs["train"] = split == "train"
    elif "split" in params:
        kwargs["split"] = split or "test"
    loader = TorchvisionLoader(name, kwargs)
    try:
        dataset = loader.dataset()
    except (RuntimeError, OSError, ValueError, TypeError) as exc:  # TypeError: needs other arguments
        raise UnknownDataset(f"{name} cannot read {relative!r}: {exc}") from exc
    targets = getattr(dataset, "targets", None)
    targets = getattr(dataset, "labels", None) if targets is None else targets
    if targets is None:
        raise UnknownDataset(f"{name} exposes no label list (targets or labels)")
    labels = np.asarray(targets, dtype=np.int64)
    classes = tuple(getattr(dataset, "classes", ()) or (str(k) for k in range(int(labels.max()) + 1)))
    identity = {"torchvision": name, "path": relative, "split": kwargs.get("split", split), "n": len(labels)}
    return ImageSet(labels, classes, label_space, identity, loader)
