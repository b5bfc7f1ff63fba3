"""Checkpoint zips that two zip readers read differently, built by byte surgery on real torch files.

Each builder takes the members of real archives (read here with ``zipfile``, which is only test
tooling) and lays them out by hand: stored, no data descriptors, every header written below. What makes
each file hostile is one thing the layout does that no torch writer does.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

Members = list[tuple[str, bytes]]


def members(archive: Path) -> Members:
    with zipfile.ZipFile(archive) as source:
        return [(info.filename, source.read(info)) for info in source.infolist()]


def local(name: str, data: bytes, declared: int | None = None) -> bytes:
    """A local header (stored, sizes ``declared`` or the real ones) followed by ``data``."""
    size = len(data) if declared is None else declared
    raw = name.encode()
    return struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 33, zlib.crc32(data), size, size,
                       len(raw), 0) + raw + data


def central(name: str, data: bytes, offset: int, zip64_size: int | None = None) -> bytes:
    """A directory entry; with ``zip64_size`` its sizes are 0xFFFFFFFF and a zip64 extra says that."""
    raw = name.encode()
    size = 0xFFFFFFFF if zip64_size is not None else len(data)
    extra = b"" if zip64_size is None else struct.pack("<HHQQ", 1, 16, zip64_size, zip64_size)
    return struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 45, 45, 0, 0, 0, 33, zlib.crc32(data), size,
                       size, len(raw), len(extra), 0, 0, 0, 0, offset) + raw + extra


def end(count: int, cd_size: int, cd_offset: int) -> bytes:
    return struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, cd_size, cd_offset, 0)


def plain(entries: Members, base: int = 0) -> tuple[bytes, bytes]:
    """(local records, central directory) of ``entries`` laid out from offset ``base``."""
    records, directory = b"", b""
    for name, data in entries:
        directory += central(name, data, base + len(records))
        records += local(name, data)
    return records, directory


def write_plain(entries: Members, target: Path) -> Path:
    """A well-formed zip of ``entries``, as the builders below lay them out (the control)."""
    records, directory = plain(entries)
    target.write_bytes(records + directory + end(len(entries), len(directory), len(records)))
    return target


def two_directories(shown: Path, hidden: Path, target: Path) -> Path:
    """One file, two central directories over two sets of members with the same names.

    ``zipfile`` reads the directory that ends right before the end record and shifts every offset by
    the bytes it thinks were prepended (its "concat"), so it reads ``shown``; a reader that takes the
    directory offset from the end record as written (miniz, torch's) reads ``hidden``::

        [hidden's records][pad][hidden's directory][shown's records][shown's directory][end record]
    """
    hide, show = members(hidden), members(shown)
    assert [n for n, _ in hide] == [n for n, _ in show], "both archives hold the same member names"
    hidden_records, hidden_directory = plain(hide)
    shown_records, _ = plain(show)
    pad = bytes(max(0, len(shown_records) - len(hidden_records)))
    torch_directory_at = len(hidden_records) + len(pad)
    # zipfile adds concat = len(hidden_directory) + len(shown_records) to every offset it reads, so the
    # shown records, which start right after the hidden directory, are written as starting here:
    _, shown_directory = plain(show, base=torch_directory_at - len(shown_records))
    assert len(shown_directory) == len(hidden_directory)
    target.write_bytes(hidden_records + pad + hidden_directory + shown_records + shown_directory
                       + end(len(show), len(shown_directory), torch_directory_at))
    return target


def prepended(source: Path, hidden_member: tuple[str, bytes], target: Path) -> Path:
    """The archive behind a stray local record that no directory entry names (offsets still right)."""
    stray = local(*hidden_member)
    records, directory = plain(members(source), base=len(stray))
    target.write_bytes(stray + records + directory
                       + end(len(members(source)), len(directory), len(stray) + len(records)))
    return target


def overlapping(source: Path, target: Path) -> Path:
    """The first member's data made to run over the second member's whole record: both members still
    read with the right CRC and size, from overlapping bytes."""
    entries = members(source)
    (first, _), rest = entries[0], entries[1:]
    tail, _ = plain(rest, base=0)
    inner = local(*rest[0])
    swallowed = inner  # the first member's data is the second member's record
    records = local(first, swallowed) + tail[len(inner):]
    directory = central(first, swallowed, 0)
    at = 30 + len(first.encode())
    for name, data in rest:
        directory += central(name, data, at)
        at += len(local(name, data))
    target.write_bytes(records + directory + end(len(entries), len(directory), len(records)))
    return target


def duplicate_name(source: Path, name_suffix: str, second: bytes, target: Path) -> Path:
    """The archive with a second member of the same name as the one ending in ``name_suffix``."""
    entries = members(source)
    name = next(n for n, _ in entries if n.endswith(name_suffix))
    return write_plain([*entries, (name, second)], target)


def zip64_lying_sizes(source: Path, name_suffix: str, target: Path, consistent: bool) -> Path:
    """The member ending in ``name_suffix`` declared 16 bytes shorter in its zip64 directory extra;
    with ``consistent`` its local header tells the same lie (the 16 bytes then belong to no member)."""
    entries = members(source)
    records, directory = b"", b""
    for name, data in entries:
        if not name.endswith(name_suffix):
            directory += central(name, data, len(records))
            records += local(name, data)
            continue
        kept = data[:-16]
        directory += central(name, kept, len(records), zip64_size=len(kept))
        records += local(name, kept) + data[-16:] if consistent else local(name, data)
    target.write_bytes(records + directory + end(len(entries), len(directory), len(records)))
    return target
