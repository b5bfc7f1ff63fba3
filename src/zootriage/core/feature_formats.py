"""A feature-cache entry (``core.feature_cache``: an uncompressed ``.npz``) read as stream pieces, in
its own format or re-encoded as safetensors, without holding its arrays in memory.

An ``.npz`` is a zip archive with one ``.npy`` member per array; each member is a small header
(magic, version, a Python-literal dict of dtype, order and shape) followed by the array's raw bytes.
:func:`npz_members` reads every member's header only (through the zip's central directory), so a
damaged entry is refused before a byte is sent.

safetensors (https://github.com/huggingface/safetensors, format version 1) is

    [8 bytes: N, little-endian u64][N bytes: JSON header][data]

where the header maps each tensor's name to ``{"dtype", "shape", "data_offsets": [begin, end]}``
(offsets relative to the start of the data, tensors back to back with no gap) plus an optional
``"__metadata__"`` of string → string; the header is padded with spaces to a multiple of 8 bytes.
Every byte of a safetensors file is thus known from the npz headers alone: its length is
8 + N + Σ nbytes, and each tensor's bytes are its npy member's bytes after the member header (C order,
little-endian), copied in ``chunk``-sized pieces. Memory is O(chunk + header), whatever the arrays'
size. Two cases cost more and are said here: a Fortran-ordered member (``np.save`` writes one for an
F-contiguous array; the cache writes C-ordered arrays) is loaded whole to be re-ordered, and a
big-endian member is byte-swapped piece by piece (no extra memory). The member ``described`` (the
model's description as JSON bytes) becomes the text ``__metadata__["described"]``, not a tensor.
"""

from __future__ import annotations

import json
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

CHUNK = 1 << 20
_LITTLE = np.little_endian
DESCRIBED = "described"  # the cache's JSON member (``core.feature_cache``): metadata, not a tensor
_SAFETENSORS_DTYPES = {
    ("f", 2): "F16", ("f", 4): "F32", ("f", 8): "F64",
    ("i", 1): "I8", ("i", 2): "I16", ("i", 4): "I32", ("i", 8): "I64",
    ("u", 1): "U8", ("u", 2): "U16", ("u", 4): "U32", ("u", 8): "U64",
    ("b", 1): "BOOL",
}


class NotAnEntry(ValueError):
    """The bytes are not a readable ``.npz`` of plain numeric arrays."""


@dataclass(frozen=True)
class Member:
    """One array of an ``.npz``: its name (without ``.npy``), dtype, shape and memory order."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    fortran_order: bool

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def _read_header(handle: BinaryIO) -> tuple[tuple[int, ...], bool, np.dtype]:
    """The npy header of an open member, leaving ``handle`` at the first data byte."""
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
    else:  # 3.0 (utf-8 field names) holds structured arrays, which no entry has
        raise NotAnEntry(f"npy format version {version} is not read here")
    return tuple(int(n) for n in shape), bool(fortran), np.dtype(dtype)


def npz_members(archive: zipfile.ZipFile) -> list[Member]:
    """Every array's header, in the archive's order; :class:`NotAnEntry` for anything else (a damaged
    archive, a member that is no ``.npy``, an object array)."""
    members = []
    try:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                raise NotAnEntry(f"member {info.filename!r} is not an array")
            with archive.open(info) as handle:
                shape, fortran, dtype = _read_header(handle)  # type: ignore[arg-type]
            if dtype.hasobject or (dtype.kind, dtype.itemsize) not in _SAFETENSORS_DTYPES:
                raise NotAnEntry(f"member {info.filename!r} has dtype {dtype}, not a plain number")
            members.append(Member(info.filename[: -len(".npy")], dtype, shape, fortran))
    except (zipfile.BadZipFile, OSError, ValueError, SyntaxError, EOFError) as exc:
        if isinstance(exc, NotAnEntry):
            raise
        raise NotAnEntry(f"not a readable npz: {exc}") from exc
    return members


def open_npz(handle: BinaryIO) -> tuple[zipfile.ZipFile, list[Member]]:
    """The archive on an open, seekable binary file and its members' headers (nothing else read)."""
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError) as exc:
        raise NotAnEntry(f"not a readable npz: {exc}") from exc
    return archive, npz_members(archive)


def _member_bytes(archive: zipfile.ZipFile, member: Member, chunk: int) -> Iterator[bytes]:
    """The member's data as C-ordered little-endian bytes, ``chunk`` bytes (rounded to whole items)
    at a time."""
    with archive.open(member.name + ".npy") as handle:
        if member.fortran_order and len(member.shape) > 1:
            array = np.lib.format.read_array(handle, allow_pickle=False)
            data = np.ascontiguousarray(array, dtype=member.dtype.newbyteorder("<")).tobytes()
            for start in range(0, len(data), chunk):
                yield data[start : start + chunk]
            return
        _read_header(handle)  # type: ignore[arg-type]
        swap = member.dtype.byteorder == ">" or (member.dtype.byteorder in "=|" and not _LITTLE)
        step = max(member.dtype.itemsize, chunk - chunk % member.dtype.itemsize)
        left = member.nbytes
        while left > 0:
            piece = handle.read(min(step, left))
            if not piece:
                raise NotAnEntry(f"member {member.name!r} ends early")
            left -= len(piece)
            yield np.frombuffer(piece, member.dtype).byteswap().tobytes() if swap else piece


def read_text_member(archive: zipfile.ZipFile, name: str) -> str:
    """A small uint8 member (the cache's ``described`` JSON) as text."""
    with archive.open(name + ".npy") as handle:
        array = np.lib.format.read_array(handle, allow_pickle=False)
    return bytes(np.asarray(array, dtype=np.uint8)).decode()


def safetensors_header(members: list[Member], metadata: dict[str, str]) -> bytes:
    """The 8-byte length and the space-padded JSON header for ``members`` laid out in order."""
    tensors: dict[str, object] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for member in members:
        code = _SAFETENSORS_DTYPES[(member.dtype.kind, member.dtype.itemsize)]
        tensors[member.name] = {
            "dtype": code, "shape": list(member.shape), "data_offsets": [offset, offset + member.nbytes],
        }
        offset += member.nbytes
    text = json.dumps(tensors, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


@dataclass(frozen=True)
class Encoded:
    """A re-encoding ready to stream: its total length and its pieces (generated lazily)."""

    length: int
    pieces: Iterator[bytes]


def as_safetensors(
    archive: zipfile.ZipFile, members: list[Member], metadata: dict[str, str], chunk: int = CHUNK
) -> Encoded:
    """The entry as safetensors: every array but ``described`` a tensor under its own name, in the
    archive's order; ``described`` (when present) and ``metadata`` in ``__metadata__``."""
    described = {DESCRIBED: read_text_member(archive, DESCRIBED)} if any(
        m.name == DESCRIBED for m in members
    ) else {}
    tensors = [m for m in members if m.name != DESCRIBED]
    head = safetensors_header(tensors, {**metadata, **described})

    def pieces() -> Iterator[bytes]:
        yield head
        for member in tensors:
            yield from _member_bytes(archive, member, chunk)

    return Encoded(len(head) + sum(m.nbytes for m in tensors), pieces())


def file_pieces(handle: BinaryIO, chunk: int = CHUNK) -> Iterator[bytes]:
    """An open file's bytes from its start, ``chunk`` at a time (the entry in its own format)."""
    handle.seek(0)
    while piece := handle.read(chunk):
        yield piece


__all__ = [
    "CHUNK",
    "DESCRIBED",
    "Encoded",
    "Member",
    "NotAnEntry",
    "as_safetensors",
    "file_pieces",
    "npz_members",
    "open_npz",
    "read_text_member",
    "safetensors_header",
]
