"""Uploaded archives: an ``.npz`` of (images, labels) or a ``.zip`` of an ImageFolder tree.

Every limit is checked from the archive's directory before anything is decompressed: the file size,
the image count, and the sum of the declared decompressed sizes; members are then read with their
declared size as a hard bound, so a zip bomb that lies about its sizes cannot expand past the limit.
"""

from __future__ import annotations

import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from core.data.folders import IMAGE_SUFFIXES
from core.data.images import DEFAULT_MAX_PIXELS, ArrayLoader, ImageSet, ZipLoader
from core.data.roots import resolve_under_roots
from core.errors import ArchiveTooLarge, BadArchive
from core.zoo.weights import sha256_file


@dataclass(frozen=True)
class ArchiveLimits:
    max_bytes: int = 1 << 30
    max_images: int = 200_000
    max_decompressed_bytes: int = 4 << 30
    max_pixels: int = DEFAULT_MAX_PIXELS


def open_archive(
    relative: str, roots: list[Path], label_space: str | None, limits: ArchiveLimits
) -> ImageSet:
    path, _ = resolve_under_roots(relative, roots)
    size = path.stat().st_size
    if size > limits.max_bytes:
        raise ArchiveTooLarge(f"{path.name}: {size} bytes is over the {limits.max_bytes}-byte limit")
    if not zipfile.is_zipfile(path):
        raise BadArchive(f"{path.name}: not a zip-based archive (.npz and .zip are both zip files)")
    identity = {"archive": sha256_file(path)}
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
    _check_total(path.name, members, limits)
    if path.suffix == ".npz":
        return _npz(path, members, label_space, identity, limits)
    return _image_zip(path, members, label_space, identity, limits)


def _check_total(name: str, members: list[zipfile.ZipInfo], limits: ArchiveLimits) -> None:
    total = sum(m.file_size for m in members)
    if total > limits.max_decompressed_bytes:
        raise ArchiveTooLarge(
            f"{name}: decompresses to {total} bytes, over the {limits.max_decompressed_bytes}-byte limit"
        )


def _npz(
    path: Path, members: list[zipfile.ZipInfo], label_space: str | None, identity: dict[str, str],
    limits: ArchiveLimits,
) -> ImageSet:
    names = {m.filename for m in members}
    if not {"images.npy", "labels.npy"} <= names:
        raise BadArchive(f"{path.name}: an .npz dataset needs arrays 'images' and 'labels'")
    try:
        with np.load(path, allow_pickle=False) as data:
            images, labels = data["images"], data["labels"]
            classes = tuple(str(c) for c in data["classes"]) if "classes.npy" in names else None
    except ValueError as exc:
        raise BadArchive(f"{path.name}: unreadable arrays ({exc})") from exc
    if len(images) > limits.max_images:
        raise ArchiveTooLarge(f"{path.name}: {len(images)} images, over the {limits.max_images} limit")
    if images.ndim not in (3, 4) or (images.ndim == 4 and images.shape[-1] not in (1, 3, 4)):
        raise BadArchive(f"{path.name}: images must be (n, H, W) or (n, H, W, C), got {images.shape}")
    if labels.shape != (len(images),) or not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0:
        raise BadArchive(f"{path.name}: labels must be n non-negative integers, one per image")
    if images.dtype != np.uint8:
        if not np.issubdtype(images.dtype, np.floating) or images.min() < 0 or images.max() > 1:
            raise BadArchive(f"{path.name}: images must be uint8, or floats in [0, 1]")
        images = np.clip(np.rint(images * 255), 0, 255).astype(np.uint8)
    if images.ndim == 4 and images.shape[-1] == 1:
        images = images[..., 0]
    labels = labels.astype(np.int64)
    classes = classes or tuple(str(k) for k in range(int(labels.max()) + 1))
    return ImageSet(labels, classes, label_space, identity, ArrayLoader(images))


def _image_zip(
    path: Path, members: list[zipfile.ZipInfo], label_space: str | None, identity: dict[str, str],
    limits: ArchiveLimits,
) -> ImageSet:
    """Class = the folder right above each image, after dropping one common top folder if any."""
    files = []
    for info in members:
        pure = PurePosixPath(info.filename)
        if pure.is_absolute() or ".." in pure.parts or "\\" in info.filename:
            raise BadArchive(f"{path.name}: member {info.filename!r} has an unsafe path")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise BadArchive(f"{path.name}: member {info.filename!r} is a symlink")
        if not info.is_dir() and pure.suffix.lower() in IMAGE_SUFFIXES:
            files.append((pure, info))
    if len(files) > limits.max_images:
        raise ArchiveTooLarge(f"{path.name}: {len(files)} images, over the {limits.max_images} limit")
    tops = {pure.parts[0] for pure, _ in files}
    depth = 1 if len(tops) == 1 and all(len(pure.parts) >= 3 for pure, _ in files) else 0
    usable = sorted(((pure.parts[depth], info) for pure, info in files if len(pure.parts) > depth + 1),
                    key=lambda item: item[1].filename)
    if not usable:
        raise BadArchive(f"{path.name}: no images in class folders (expected class/image.png)")
    classes = tuple(sorted({name for name, _ in usable}))
    index = {name: k for k, name in enumerate(classes)}
    labels = np.array([index[name] for name, _ in usable], dtype=np.int64)
    loader = ZipLoader(path, tuple(info for _, info in usable), limits.max_pixels)
    return ImageSet(labels, classes, label_space, identity, loader)
