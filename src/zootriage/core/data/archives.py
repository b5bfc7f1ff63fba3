"""Uploaded archives: an ``.npz`` of (images, labels) or a ``.zip`` of an ImageFolder tree.

Every limit is checked from the archive's headers before anything is decompressed (``check_archive``,
also run by the API at submit time): the file size, the member and image counts, the sum of the
declared decompressed sizes and, for an ``.npz``, each array's declared shape against its member's
size; members are then read with their declared size as a hard bound, so a zip bomb that lies about
its sizes cannot expand past the limit. Label values index class names, so they are bounded too.
"""

from __future__ import annotations

import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from zootriage.core.data.archive_headers import member_count, npy_header
from zootriage.core.data.folders import IMAGE_SUFFIXES
from zootriage.core.data.images import DEFAULT_MAX_PIXELS, ArrayLoader, ImageSet, ZipLoader, pixel_levels
from zootriage.core.data.roots import resolve_under_roots
from zootriage.core.errors import ArchiveTooLarge, BadArchive
from zootriage.core.zoo.weights import sha256_file


@dataclass(frozen=True)
class ArchiveLimits:
    max_bytes: int = 1 << 30
    max_images: int = 200_000
    max_decompressed_bytes: int = 4 << 30
    max_pixels: int = DEFAULT_MAX_PIXELS
    max_classes: int = 100_000  # label values index class names: they must not size an allocation
    # A folder is listed, not inflated: its bound only keeps the listing's memory and time in proportion,
    # and leaves room for ImageNet-1k's training set (1.28 M images).
    max_folder_images: int = 2_000_000

    @property
    def max_members(self) -> int:
        """Images plus their folders (and an npz's few arrays)."""
        return 2 * self.max_images + 16


@dataclass(frozen=True)
class CheckedArchive:
    """An archive whose directory and declared sizes passed every limit; nothing decompressed yet."""

    path: Path
    members: list[zipfile.ZipInfo]


def check_archive(relative: str, roots: list[Path], limits: ArchiveLimits) -> CheckedArchive:
    """Every check that needs only the archive's headers (``core.data.archive_headers``): cheap and
    bounded, so the API runs it at submit time, and ``open_archive`` runs it again before reading.

    ``zipfile`` parses the directory only after ``member_count`` has bounded it; what it still refuses
    comes back as ``BadArchive``: ``UnicodeDecodeError`` for a name flagged UTF-8 that is not, and the
    ``ValueError`` family and the rest for any other malformed directory (never an uncaught error)."""
    path, _ = resolve_under_roots(relative, roots)
    if not path.is_file():
        raise BadArchive(f"{relative!r} is not a file")
    size = path.stat().st_size
    if size > limits.max_bytes:
        raise ArchiveTooLarge(f"{path.name}: {size} bytes is over the {limits.max_bytes}-byte limit")
    member_count(path, limits.max_members)
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            _check_total(path.name, members, limits)
            if path.suffix == ".npz":
                _check_npz(path.name, archive, members, limits)
    except UnicodeDecodeError as exc:
        raise BadArchive(f"{path.name}: a member name flagged UTF-8 is not valid UTF-8 ({exc})") from exc
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, ValueError) as exc:
        raise BadArchive(f"{path.name}: not a readable zip archive ({exc})") from exc
    checked = CheckedArchive(path, members)
    if path.suffix != ".npz":
        _image_members(checked, limits)
    return checked


def open_archive(
    relative: str, roots: list[Path], label_space: str | None, limits: ArchiveLimits
) -> ImageSet:
    checked = check_archive(relative, roots, limits)
    identity = {"archive": sha256_file(checked.path)}
    if checked.path.suffix == ".npz":
        return _npz(checked, label_space, identity, limits)
    return _image_zip(checked, label_space, identity, limits)


def _check_total(name: str, members: list[zipfile.ZipInfo], limits: ArchiveLimits) -> None:
    total = sum(m.file_size for m in members)
    if total > limits.max_decompressed_bytes:
        raise ArchiveTooLarge(
            f"{name}: decompresses to {total} bytes, over the {limits.max_decompressed_bytes}-byte limit"
        )


def _check_npz(
    name: str, archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], limits: ArchiveLimits
) -> None:
    """The arrays' declared shapes and dtypes, before ``np.load`` allocates by them."""
    found = {m.filename: m for m in members}
    if not {"images.npy", "labels.npy"} <= found.keys():
        raise BadArchive(f"{name}: an .npz dataset needs arrays 'images' and 'labels'")
    images = npy_header(archive, found["images.npy"], name)
    labels = npy_header(archive, found["labels.npy"], name)
    shape = images.shape
    if len(shape) not in (3, 4) or (len(shape) == 4 and shape[-1] not in (1, 3, 4)):
        raise BadArchive(f"{name}: images must be (n, H, W) or (n, H, W, C), got {shape}")
    if shape[0] == 0:
        raise BadArchive(f"{name}: the archive holds no images")
    if shape[0] > limits.max_images:
        raise ArchiveTooLarge(f"{name}: {shape[0]} images, over the {limits.max_images} limit")
    if shape[1] == 0 or shape[2] == 0:
        raise BadArchive(f"{name}: images of zero size ({shape[1]}×{shape[2]})")
    if shape[1] * shape[2] > limits.max_pixels:
        raise ArchiveTooLarge(
            f"{name}: {shape[1]}×{shape[2]} images are over the {limits.max_pixels}-pixel limit"
        )
    if images.dtype != np.uint8 and not np.issubdtype(images.dtype, np.floating):
        raise BadArchive(f"{name}: images must be uint8, or floats in [0, 1], not {images.dtype}")
    if labels.shape != (shape[0],) or not np.issubdtype(labels.dtype, np.integer):
        raise BadArchive(f"{name}: labels must be n integers, one per image")
    if "classes.npy" in found:
        classes = npy_header(archive, found["classes.npy"], name)
        if len(classes.shape) != 1 or not 1 <= classes.shape[0] <= limits.max_classes:
            raise BadArchive(f"{name}: classes must be 1 to {limits.max_classes} names")


def _npz(
    checked: CheckedArchive, label_space: str | None, identity: dict[str, str], limits: ArchiveLimits
) -> ImageSet:
    name = checked.path.name
    try:
        with np.load(checked.path, allow_pickle=False) as data:
            images, labels = data["images"], data["labels"]
            classes = tuple(str(c) for c in data["classes"]) if "classes.npy" in data.files else None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise BadArchive(f"{name}: unreadable arrays ({exc})") from exc
    n_classes = len(classes) if classes is not None else limits.max_classes
    if labels.min() < 0 or labels.max() >= n_classes:
        raise BadArchive(f"{name}: labels must be class indices in [0, {n_classes})")
    if images.dtype != np.uint8:
        if images.min() < 0 or images.max() > 1:
            raise BadArchive(f"{name}: images must be uint8, or floats in [0, 1]")
        images = pixel_levels(images, 255)
    if images.ndim == 4 and images.shape[-1] == 1:
        images = images[..., 0]
    labels = labels.astype(np.int64)
    classes = classes or tuple(str(k) for k in range(int(labels.max()) + 1))
    return ImageSet(labels, classes, label_space, identity, ArrayLoader(images))


def _image_members(checked: CheckedArchive, limits: ArchiveLimits) -> list[tuple[str, zipfile.ZipInfo]]:
    """(class, member) of every image. Class = the folder right above each image, after dropping one
    common top folder if any; unsafe names (absolute, ``..``, backslashes, symlinks) are refused."""
    name = checked.path.name
    files = []
    for info in checked.members:
        pure = PurePosixPath(info.filename)
        if pure.is_absolute() or ".." in pure.parts or "\\" in info.filename:
            raise BadArchive(f"{name}: member {info.filename!r} has an unsafe path")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise BadArchive(f"{name}: member {info.filename!r} is a symlink")
        if not info.is_dir() and pure.suffix.lower() in IMAGE_SUFFIXES:
            files.append((pure, info))
    if len(files) > limits.max_images:
        raise ArchiveTooLarge(f"{name}: {len(files)} images, over the {limits.max_images} limit")
    tops = {pure.parts[0] for pure, _ in files}
    depth = 1 if len(tops) == 1 and all(len(pure.parts) >= 3 for pure, _ in files) else 0
    usable = sorted(((pure.parts[depth], info) for pure, info in files if len(pure.parts) > depth + 1),
                    key=lambda item: item[1].filename)
    if not usable:
        raise BadArchive(f"{name}: no images in class folders (expected class/image.png)")
    if any(info.file_size == 0 for _, info in usable):
        raise BadArchive(f"{name}: holds empty (zero-byte) image files")
    return usable


def _image_zip(
    checked: CheckedArchive, label_space: str | None, identity: dict[str, str], limits: ArchiveLimits
) -> ImageSet:
    usable = _image_members(checked, limits)
    classes = tuple(sorted({name for name, _ in usable}))
    index = {name: k for k, name in enumerate(classes)}
    labels = np.array([index[name] for name, _ in usable], dtype=np.int64)
    loader = ZipLoader(checked.path, tuple(info for _, info in usable), limits.max_pixels)
    return ImageSet(labels, classes, label_space, identity, loader)
