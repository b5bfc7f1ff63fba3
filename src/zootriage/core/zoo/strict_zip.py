"""The one zip reader of the static check: every byte of the archive accounted for, or the file is refused.

Why not ``zipfile``: torch loads zips with its own reader (miniz, in C++), and two readers can be shown
different contents by one file. ``zipfile`` finds the central directory just before the end record and
shifts every offset by any bytes prepended to the archive; miniz takes the directory's offset from the
end record as written. A file with a second directory (or data before the first member, members whose
byte ranges overlap, two members of one name (torch's reader compares names ignoring case), local
headers or zip64 fields that contradict the
directory) can show each reader a different member. So this reader accepts only archives with a single
reading, and the static check then writes what it read into a new archive (``core.zoo.canonical_zip``)
which is what torch loads.

The archive must tile the file exactly::

    [local header, data, optional data descriptor] for every member, back to back from offset 0
    central directory (one entry per member), starting right after the last member
    [zip64 end record, zip64 locator]      (torch always writes them; zipfile past 65,535 members or 4 GiB)
    end record, with no comment, ending the file

Each local header must agree with its directory entry (name, flags, method, CRC and sizes, zip64 fields
resolved); a data descriptor (flag bit 3, which torch sets) must carry the same CRC and sizes. A zip
nested inside a member (the sample inputs of a ``.pt2``) may contain end-record signatures: they lie in a
member's data, which the tiling accounts for, so no signature is searched for anywhere.

Members are decompressed in chunks of at most ``CHUNK`` bytes, never past the size the directory declares,
and the CRC and the exact size are checked at the end: a member that does not decompress to exactly what
its entry says is refused.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from zootriage.core.errors import CheckpointTooLarge, CheckpointUnsafe, TruncatedCheckpoint

CHUNK = 1 << 20
STORED, DEFLATED = 0, 8
LOCAL, CENTRAL, DESCRIPTOR = b"PK\x03\x04", b"PK\x01\x02", b"PK\x07\x08"
END, END64, LOCATOR64 = b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07"
_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # 30 bytes
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")  # 46 bytes
_END = struct.Struct("<4sHHHHIIH")  # 22 bytes
_END64 = struct.Struct("<4sQHHIIQQQQ")  # 56 bytes
_LOCATOR64 = struct.Struct("<4sIQI")  # 20 bytes
MAX32, MAX16 = 0xFFFFFFFF, 0xFFFF
ZIP64_EXTRA = 0x0001
ENTRY_EXTRAS = 2048  # bytes of extra fields and comment a directory entry may carry (torch writes none)
# Flag bits a reader may meet: 1-2 deflate options, 3 data descriptor, 11 UTF-8 names. Bit 0 and 6
# are encryption; the rest (patched data, masked headers) no torch writer sets.
_ALLOWED_FLAGS = 0b0000_1000_0000_1110


@dataclass(frozen=True)
class Entry:
    """One member, as the directory and its local header agree it is."""

    name: str
    method: int
    crc: int
    size: int  # bytes once decompressed
    packed: int  # bytes stored in the archive
    header: int  # offset of the local header
    data: int  # offset of the stored bytes
    end: int  # offset just past the member's record (data and descriptor)


def read_directory(f: IO[bytes], size: int, name: str, max_members: int, max_name: int) -> list[Entry]:
    """The archive's members in directory order, or a refusal naming ``name`` (the user's file name).

    Raises ``TruncatedCheckpoint`` for a file that is not a complete zip, ``CheckpointUnsafe`` for one
    that could be read two ways or uses encryption or a compression other than stored/deflated, and
    ``CheckpointTooLarge`` past ``max_members`` members.
    """
    count, cd_size, cd_offset, cd_end = _end_records(f, size, name)
    if count > max_members:
        raise CheckpointTooLarge(f"{name}: {count} archive members, over the limit {max_members}")
    if cd_offset + cd_size != cd_end:
        raise CheckpointUnsafe(f"{name}: the zip's central directory is not where its end record says")
    if cd_size > count * (_CENTRAL.size + max_name + ENTRY_EXTRAS):
        raise CheckpointUnsafe(f"{name}: the zip's central directory is larger than its entries need")
    f.seek(cd_offset)
    directory = f.read(cd_size)
    if len(directory) != cd_size:
        raise _corrupt(name, "the central directory runs past the end of the file")
    entries: list[Entry] = []
    seen: set[str] = set()
    at = 0
    for _ in range(count):
        entry, at = _central_entry(f, directory, at, name, max_name)
        if entry.name.lower() in seen:  # torch's reader looks names up ignoring case
            raise CheckpointUnsafe(f"{name}: the archive holds {entry.name[:80]!r} twice (ignoring case)")
        seen.add(entry.name.lower())
        entries.append(entry)
    if at != cd_size:
        raise CheckpointUnsafe(f"{name}: the zip's central directory holds more than its {count} entries")
    position = 0
    for entry in sorted(entries, key=lambda e: e.header):
        if entry.header != position:
            what = "data before its first member" if position == 0 else "overlapping or separated members"
            raise CheckpointUnsafe(f"{name}: the zip has {what} (at byte {min(position, entry.header)})")
        position = entry.end
    if position != cd_offset:
        raise CheckpointUnsafe(f"{name}: the zip has data between its last member and its central directory")
    return entries


def chunks(f: IO[bytes], entry: Entry, name: str) -> Iterator[bytes]:
    """The member's bytes, decompressed, in chunks of at most ``CHUNK``; refused (after the last chunk
    at the latest) unless they are exactly ``entry.size`` bytes with ``entry.crc``."""
    inflater = zlib.decompressobj(-15) if entry.method == DEFLATED else None
    crc, total, left = 0, 0, entry.packed
    f.seek(entry.data)
    try:
        while left or (inflater is not None and inflater.unconsumed_tail):
            if inflater is not None and inflater.unconsumed_tail:
                packed = inflater.unconsumed_tail
            else:
                packed = f.read(min(CHUNK, left))
                if not packed:
                    raise _corrupt(name, f"member {entry.name[:80]!r} runs past the end of the file")
                left -= len(packed)
            chunk = packed if inflater is None else inflater.decompress(packed, CHUNK)
            total += len(chunk)
            if total > entry.size:
                raise _corrupt(name, f"member {entry.name[:80]!r} holds more than its declared size")
            crc = zlib.crc32(chunk, crc)
            if chunk:
                yield chunk
        if inflater is not None:
            tail = inflater.flush()
            total += len(tail)
            if tail or not inflater.eof or inflater.unused_data:
                raise _corrupt(name, f"member {entry.name[:80]!r} is not one complete deflate stream")
    except zlib.error as exc:
        raise _corrupt(name, f"member {entry.name[:80]!r} does not decompress ({exc})") from exc
    if total != entry.size or crc != entry.crc:
        raise _corrupt(name, f"member {entry.name[:80]!r} fails its size or CRC check")


def _end_records(f: IO[bytes], size: int, name: str) -> tuple[int, int, int, int]:
    """(members, directory size, directory offset, where the directory must end), from the end record
    that ends the file and, when present, the zip64 records right before it."""
    if size < _END.size:
        raise _corrupt(name, "too short for a zip")
    f.seek(size - _END.size)
    sig, disk, cd_disk, here, count, cd_size, cd_offset, comment = _END.unpack(f.read(_END.size))
    if sig != END or comment != 0:
        raise _corrupt(name, "it does not end with a zip end record (truncated, or data appended after it)")
    if disk != 0 or cd_disk != 0 or here != count:
        raise CheckpointUnsafe(f"{name}: a multi-disk zip")
    cd_end = size - _END.size
    locator_at = cd_end - _LOCATOR64.size
    if locator_at < 0:
        return count, cd_size, cd_offset, cd_end
    f.seek(locator_at)
    lsig, ldisk, record_at, disks = _LOCATOR64.unpack(f.read(_LOCATOR64.size))
    if lsig != LOCATOR64:
        return count, cd_size, cd_offset, cd_end
    cd_end = locator_at - _END64.size
    if ldisk != 0 or disks != 1 or record_at != cd_end:
        raise CheckpointUnsafe(f"{name}: the zip64 end record is not right before its locator")
    f.seek(cd_end)
    (sig64, record_size, _made, _needed, disk64, cd_disk64, here64, count64, cd_size64,
     cd_offset64) = _END64.unpack(f.read(_END64.size))
    if sig64 != END64 or record_size != _END64.size - 12 or disk64 or cd_disk64 or here64 != count64:
        raise CheckpointUnsafe(f"{name}: a zip64 end record this reader does not accept")
    pairs = ((count, count64, MAX16), (cd_size, cd_size64, MAX32), (cd_offset, cd_offset64, MAX32))
    for short, full, limit in pairs:
        if short != limit and short != full:
            raise CheckpointUnsafe(f"{name}: the zip's end record and its zip64 end record disagree")
    return count64, cd_size64, cd_offset64, cd_end


def _central_entry(f: IO[bytes], directory: bytes, at: int, name: str, max_name: int) -> tuple[Entry, int]:
    """The directory entry at ``at``, checked against its local header; and where the next one starts."""
    if at + _CENTRAL.size > len(directory):
        raise _corrupt(name, "the central directory ends inside an entry")
    (sig, _made, _needed, flags, method, _time, _date, crc, packed, size, name_len, extra_len, comment_len,
     disk, _internal, _external, header) = _CENTRAL.unpack_from(directory, at)
    if sig != CENTRAL:
        raise _corrupt(name, "a central directory entry has no signature")
    start = at + _CENTRAL.size
    raw_name = directory[start : start + name_len]
    extra = directory[start + name_len : start + name_len + extra_len]
    after = start + name_len + extra_len + comment_len
    if after > len(directory):
        raise _corrupt(name, "the central directory ends inside an entry")
    member = _member_name(raw_name, name, max_name)
    if flags & ~_ALLOWED_FLAGS or method not in (STORED, DEFLATED):
        raise CheckpointUnsafe(f"{name}: {member[:80]!r} is encrypted or oddly compressed")
    wide = _zip64(extra, [v == MAX32 for v in (size, packed, header)] + [disk == MAX16], name, member)
    size, packed, header = (wide.pop(0) if v == MAX32 else v for v in (size, packed, header))
    if disk != 0 or (method == STORED and packed != size):
        raise CheckpointUnsafe(f"{name}: the directory entry of {member[:80]!r} is inconsistent")
    data, end = _local_record(f, header, raw_name, flags, method, crc, packed, size, name, member)
    return Entry(member, method, crc, size, packed, header, data, end), after


def _local_record(
    f: IO[bytes], header: int, raw_name: bytes, flags: int, method: int, crc: int, packed: int, size: int,
    name: str, member: str,
) -> tuple[int, int]:
    """(data offset, record end) of the member whose local header is at ``header``, refused unless
    the header (and descriptor) say what the directory says."""
    f.seek(header)
    head = f.read(_LOCAL.size)
    if len(head) != _LOCAL.size:
        raise _corrupt(name, f"the local header of {member[:80]!r} is past the end of the file")
    (sig, _needed, lflags, lmethod, _time, _date, lcrc, lpacked, lsize, name_len,
     extra_len) = _LOCAL.unpack(head)
    lname = f.read(name_len)
    lextra = f.read(extra_len)
    disagree = CheckpointUnsafe(f"{name}: the local header of {member[:80]!r} disagrees with the directory")
    if sig != LOCAL or lname != raw_name or lflags != flags or lmethod != method or len(lextra) != extra_len:
        raise disagree
    if lsize == MAX32 or lpacked == MAX32:  # a local zip64 extra holds both sizes, uncompressed first
        values = _zip64(lextra, [True, True], name, member)
        lsize, lpacked = values[0], values[1]
    described = (lcrc, lpacked, lsize) == (crc, packed, size)
    if not described and not (flags & 0x08 and (lcrc, lpacked, lsize) == (0, 0, 0)):
        raise disagree
    data = header + _LOCAL.size + name_len + extra_len
    end = data + packed
    if flags & 0x08:
        end += _descriptor(f, end, crc, packed, size, disagree)
    return data, end


def _descriptor(f: IO[bytes], at: int, crc: int, packed: int, size: int, disagree: Exception) -> int:
    """Length of the data descriptor at ``at`` (16 bytes, or 24 with 8-byte sizes), which must repeat
    the directory's CRC and sizes behind its signature. The 16-byte form can only repeat sizes that
    fit in 32 bits: a zip64 member's (2**32 or more) must be in the 24-byte form."""
    f.seek(at)
    raw = f.read(24)
    short = packed <= MAX32 and size <= MAX32
    if short and raw[:4] == DESCRIPTOR and raw[4:16] == struct.pack("<III", crc, packed, size):
        return 16
    if raw[:4] == DESCRIPTOR and raw[4:24] == struct.pack("<IQQ", crc, packed, size):
        return 24
    raise disagree


def _zip64(extra: bytes, wanted: list[bool], name: str, member: str) -> list[int]:
    """The 8-byte values of the zip64 extra field for each ``wanted`` slot, in order; refused when the
    extra fields do not parse, the zip64 one appears twice or is too short."""
    fields: dict[int, bytes] = {}
    at = 0
    while at < len(extra):
        if at + 4 > len(extra):
            raise CheckpointUnsafe(f"{name}: the extra fields of {member[:80]!r} do not parse")
        kind, length = struct.unpack_from("<HH", extra, at)
        if kind in fields or at + 4 + length > len(extra):
            raise CheckpointUnsafe(f"{name}: the extra fields of {member[:80]!r} do not parse")
        fields[kind] = extra[at + 4 : at + 4 + length]
        at += 4 + length
    needed = sum(wanted[:3])
    if needed == 0:
        return []
    body = fields.get(ZIP64_EXTRA, b"")
    if len(body) < 8 * needed or wanted[3:] == [True]:
        raise CheckpointUnsafe(f"{name}: the zip64 fields of {member[:80]!r} are missing")
    return list(struct.unpack_from(f"<{needed}Q", body))


def _member_name(raw: bytes, name: str, max_name: int) -> str:
    """The member's name as UTF-8 (torch writes UTF-8; the bytes are what every reader compares)."""
    try:
        member = raw.decode("utf-8")
    except UnicodeDecodeError:
        member = raw.decode("utf-8", "replace")
        raise CheckpointUnsafe(f"{name}: an archive member has an unsafe name {member[:80]!r}") from None
    unsafe = "\\" in member or "\0" in member or ".." in member.split("/") or not member
    if len(member) > max_name or unsafe:
        raise CheckpointUnsafe(f"{name}: an archive member has an unsafe name {member[:80]!r}")
    return member


def _corrupt(name: str, detail: str) -> TruncatedCheckpoint:
    return TruncatedCheckpoint(f"{name}: the zip archive is incomplete or corrupt ({detail})")
