"""What an archive declares, read from its headers alone with every read bounded.

An archive is checked before anything in it is decompressed or allocated: the end-of-central-directory
record gives the member count and the directory's size (both bounded before the directory is parsed),
and for an ``.npz`` each array's ``.npy`` header (a few hundred bytes) gives its dtype and shape. A
declared shape must account for exactly the bytes its member declares (shape × itemsize + header =
the member's size), so an array cannot claim 10^12 elements that a later ``np.load`` would allocate,
and the member sizes themselves are bounded by ``ArchiveLimits``. This is cheap enough for the API to
run at submit time; the worker runs it again before opening.
"""

from __future__ import annotations

import io
import math
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zootriage.core.errors import ArchiveTooLarge, BadArchive

_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EOCD = b"PK\x06\x06"
_EOCD_SIZE = 22
_MAX_COMMENT = 65535
_NPY_HEADER_MAX = 65536  # numpy writes headers of a few hundred bytes; v2/v3 allow more, never this much
MEMBER_NAME_MAX = 1024


@dataclass(frozen=True)
class DeclaredArray:
    dtype: np.dtype
    shape: tuple[int, ...]


def member_count(path: Path, max_members: int) -> int:
    """The member count the archive declares, refused over ``max_members`` (or not a zip at all)
    before its central directory is read."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        tail_len = min(size, _EOCD_SIZE + _MAX_COMMENT)
        handle.seek(size - tail_len)
        tail = handle.read(tail_len)
        at = tail.rfind(_EOCD)
        if at < 0 or len(tail) - at < _EOCD_SIZE:
            raise BadArchive(f"{path.name}: not a zip-based archive (.npz and .zip are both zip files)")
        entries, cd_size = struct.unpack("<HI", tail[at + 10 : at + 16])
        locator_at = at - 20
        if (entries == 0xFFFF or cd_size == 0xFFFFFFFF) and locator_at >= 0 and tail[
            locator_at : locator_at + 4
        ] == _ZIP64_LOCATOR:
            (record_offset,) = struct.unpack("<Q", tail[locator_at + 8 : locator_at + 16])
            if record_offset > size - 56:
                raise BadArchive(f"{path.name}: a zip64 record points outside the file")
            handle.seek(record_offset)
            record = handle.read(56)
            if record[:4] != _ZIP64_EOCD:
                raise BadArchive(f"{path.name}: a damaged zip64 directory record")
            entries, cd_size = struct.unpack("<QQ", record[32:48])
    if entries > max_members:
        raise ArchiveTooLarge(f"{path.name}: {entries} members, over the {max_members} limit")
    if cd_size > entries * (46 + 3 * MEMBER_NAME_MAX + 64) + 64 or cd_size > size:
        raise BadArchive(f"{path.name}: its central directory declares an implausible size ({cd_size})")
    return int(entries)


def npy_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, archive_name: str) -> DeclaredArray:
    """The dtype and shape an ``.npy`` member declares, after checking that its data size is exactly
    the member's declared size (no more, so nothing is allocated beyond what the member holds)."""
    where = f"{archive_name}: {info.filename}"
    try:
        with archive.open(info) as member:
            head = member.read(_NPY_HEADER_MAX)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise BadArchive(f"{where}: unreadable member ({exc})") from exc
    stream = io.BytesIO(head)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version in ((2, 0), (3, 0)):
            shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except (ValueError, SyntaxError, TypeError, struct.error) as exc:
        raise BadArchive(f"{where}: not a readable .npy header ({exc})") from exc
    if dtype.hasobject:
        raise BadArchive(f"{where}: object arrays are refused (they would need pickle)")
    if any(d < 0 for d in shape):
        raise BadArchive(f"{where}: negative dimension in {shape}")
    declared = math.prod(shape) * dtype.itemsize
    holds = info.file_size - stream.tell()
    if declared != holds:
        raise BadArchive(
            f"{where}: its header declares {shape} {dtype} ({declared} bytes) but the member holds {holds}"
        )
    return DeclaredArray(dtype, tuple(int(d) for d in shape))
