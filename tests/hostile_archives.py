"""Dataset archives built to attack a loader: each is small on disk and lies or is empty in one way."""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _npy_header(shape: tuple[int, ...], descr: str = "|u1") -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def empty(path: Path) -> None:
    """A zip with no members at all (``np.savez`` of nothing)."""
    np.savez(path)


def no_images(path: Path) -> None:
    np.savez(path, images=np.zeros((0, 8, 8), dtype=np.uint8), labels=np.zeros(0, dtype=np.int64))


def declares_a_trillion(path: Path) -> None:
    """An images header declaring 10^12 images of 8×8 over 64 bytes of data."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("images.npy", _npy_header((10**12, 8, 8)) + bytes(64))
        archive.writestr("labels.npy", _npy(np.zeros(1, dtype=np.int64)))


def lying_sizes(path: Path) -> None:
    """A real npz whose central directory says images.npy is 100 bytes when it holds 3,328."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("images.npy", _npy(np.zeros((50, 8, 8), dtype=np.uint8)))
        archive.writestr("labels.npy", _npy(np.zeros(50, dtype=np.int64)))
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        name_len = struct.unpack("<H", data[at + 28 : at + 30])[0]
        if data[at + 46 : at + 46 + name_len] == b"images.npy":
            data[at + 24 : at + 28] = struct.pack("<I", 100)
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))


def zero_size_images(path: Path) -> None:
    np.savez(path, images=np.zeros((4, 0, 8), dtype=np.uint8), labels=np.arange(4))


def sparse_labels(path: Path) -> None:
    """Two 8×8 images labelled 0 and 2e7: a label value must not size the class list."""
    np.savez(path, images=np.zeros((2, 8, 8), dtype=np.uint8), labels=np.array([0, 20_000_000]))


HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "empty": (empty, "needs arrays 'images' and 'labels'"),
    "no_images": (no_images, "holds no images"),
    "declares_a_trillion": (declares_a_trillion, "declares"),
    "lying_sizes": (lying_sizes, "unreadable member"),  # read up to its declared size: the CRC fails
    "zero_size_images": (zero_size_images, "zero size"),
}
