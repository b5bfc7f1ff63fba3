"""What an archive declares, read from its headers alone with every read bounded.

An archive is checked before anything in it is decompressed or allocated: the end-of-central-directory
record gives the member count and the directory's size (both bounded, and the count checked against
the entries the directory really holds, before ``zipfile`` parses it), and for an ``.npz`` each
array's ``.npy`` header (a few hundred bytes) gives its dtype and shape. A declared shape must account
for exactly the bytes its member declares (shape × itemsize + header = the member's size), so an array
cannot claim 10^12 elements that a later ``np.load`` would allocate, and the member sizes themselves
are bounded by ``ArchiveLimits``. This is cheap enough for the API to run at submit time; the worker
runs it again before opening.
"""

from __future__ import annotations

import io
import math
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from zootriage.core.errors import ArchiveTooLarge, BadArchive

_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EOCD = b"PK\x06\x06"
_CD_ENTRY = b"PK\x01\x02"
_EOCD_SIZE = 22
_ZIP64_LOCATOR_SIZE = 20
_ZIP64_EOCD_SIZE = 56
_CD_ENTRY_SIZE = 46  # a central-directory entry's fixed header; its name, extra and comment follow
_MAX_COMMENT = 65535
_NPY_HEADER_MAX = 65536  # numpy writes headers of a few hundred bytes; v2/v3 allow more, never this much
MEMBER_NAME_MAX = 1024


@dataclass(frozen=True)
class DeclaredArray:
    dtype: np.dtype
    shape: tuple[int, ...]


def member_count(path: Path, max_members: int) -> int:
    """The archive's member count, refused over ``max_members`` (or not a zip at all) before
    ``zipfile`` parses the central directory.

    ``zipfile`` does not use the count the end record declares: it builds one ``ZipInfo`` per entry
    until the directory's declared byte size is used up, and an entry can be 47 bytes, so a directory
    declaring 4,016 members can hold 270,000 (and a 1 GiB one 20 million). Bounding the declared count
    and byte size is therefore not enough: the directory is found where ``zipfile`` finds it (right
    before the end record, or before the zip64 record and locator, which ``zipfile`` uses whenever a
    locator is there) and walked entry by entry (``_walk_directory``), stopping one past the declared
    count, so a directory holding any other count is refused having read at most that many headers.
    """
    size = path.stat().st_size
    with path.open("rb") as handle:
        tail_start = max(size - _EOCD_SIZE - _MAX_COMMENT, 0)
        handle.seek(tail_start)
        tail = handle.read()
        at = tail.rfind(_EOCD)
        if at < 0 or len(tail) - at < _EOCD_SIZE:
            raise BadArchive(f"{path.name}: not a zip-based archive (.npz and .zip are both zip files)")
        entries, cd_size = struct.unpack("<HI", tail[at + 10 : at + 16])
        cd_end = tail_start + at
        if cd_end >= _ZIP64_LOCATOR_SIZE:
            handle.seek(cd_end - _ZIP64_LOCATOR_SIZE)
            if handle.read(4) == _ZIP64_LOCATOR:
                cd_end -= _ZIP64_LOCATOR_SIZE + _ZIP64_EOCD_SIZE
                if cd_end < 0:
                    raise BadArchive(f"{path.name}: a zip64 locator with no room for its record")
                handle.seek(cd_end)
                record = handle.read(_ZIP64_EOCD_SIZE)
                if record[:4] != _ZIP64_EOCD:
                    raise BadArchive(f"{path.name}: a damaged zip64 directory record")
                entries, cd_size = struct.unpack("<QQ", record[32:48])
        if entries > max_members:
            raise ArchiveTooLarge(f"{path.name}: {entries} members, over the {max_members} limit")
        if cd_size > entries * (_CD_ENTRY_SIZE + 3 * MEMBER_NAME_MAX + 64) + 64 or cd_size > cd_end:
            raise BadArchive(f"{path.name}: its central directory declares an implausible size ({cd_size})")
        found = _walk_directory(handle, cd_end - cd_size, cd_size, entries, path.name)
    if found != entries:
        held = f"more than {entries}" if found > entries else str(found)
        raise BadArchive(f"{path.name}: its central directory holds {held} entries but declares {entries}")
    return int(entries)


def _walk_directory(handle: BinaryIO, start: int, cd_size: int, declared: int, name: str) -> int:
    """How many entries ``zipfile`` would build from the ``cd_size`` bytes at ``start``, counted the
    way it walks them (a 46-byte header, then name, extra and comment) but only up to ``declared + 1``:
    46 bytes are read per entry and nothing is kept. A header ``zipfile`` would refuse is refused."""
    handle.seek(start)
    found = used = 0
    while used < cd_size and found <= declared:
        header = handle.read(_CD_ENTRY_SIZE)
        if used + _CD_ENTRY_SIZE > cd_size or header[:4] != _CD_ENTRY:
            raise BadArchive(f"{name}: a damaged central directory (entry {found} is not an entry header)")
        name_len, extra_len, comment_len = struct.unpack("<HHH", header[28:34])
        handle.seek(name_len + extra_len + comment_len, io.SEEK_CUR)
        used += _CD_ENTRY_SIZE + name_len + extra_len + comment_len
        found += 1
    return found


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
