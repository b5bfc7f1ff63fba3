"""The archive torch loads: what the static check read, written anew in the plainest zip form.

``core.zoo.archive_check`` reads an upload once, with one reader (``core.zoo.strict_zip``), and hands
every member's bytes to this writer as it checks them; torch then opens the new file, never the upload.
Whatever an upload does to show two readers two contents, the new archive has only the one that was
checked, in a layout every reader sees alike: members stored (not compressed) back to back from offset 0,
each local header carrying the final CRC and sizes (no data descriptors), then the central directory,
the zip64 end records only where a count, size or offset needs them, and the end record with no comment.

Each member's data starts at a multiple of ``ALIGNMENT`` bytes, as torch's own writer does (its
``.storage_alignment`` record says 64), by padding the local header with an extra field; torch's reader
does not need it except to memory-map storages, but then a canonical file behaves like a saved one.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from zootriage.core.zoo.strict_zip import CENTRAL, END, END64, LOCAL, LOCATOR64, MAX16, MAX32, ZIP64_EXTRA

ALIGNMENT = 64
PADDING_EXTRA = 0x5A50  # an extra-field id no reader interprets: the padding that aligns member data
UTF8_NAMES = 0x0800
DOS_DATE = (0 << 9) | (1 << 5) | 1  # 1980-01-01: the file's time says nothing about its contents


@dataclass(frozen=True)
class _Written:
    name: bytes
    crc: int
    size: int
    header: int


class CanonicalZip:
    """Writes members one after another to ``f`` (positioned at 0, opened for writing)."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        self.offset = 0
        self.written: list[_Written] = []

    def add(self, name: str, size: int, crc: int, chunks: Iterable[bytes]) -> None:
        """Write member ``name`` of ``size`` bytes with CRC-32 ``crc`` from ``chunks``; raises
        ``ValueError`` if the chunks are not exactly those bytes (the header is already written)."""
        raw = name.encode("utf-8")
        wide = size >= MAX32
        zip64 = struct.pack("<HHQQ", ZIP64_EXTRA, 16, size, size) if wide else b""
        fixed = self.offset + 30 + len(raw) + len(zip64) + 4
        padding = struct.pack("<HH", PADDING_EXTRA, -fixed % ALIGNMENT) + bytes(-fixed % ALIGNMENT)
        short = MAX32 if wide else size
        header = self.offset
        self._write(struct.pack("<4sHHHHHIIIHH", LOCAL, 45 if wide else 20, UTF8_NAMES, 0, 0, DOS_DATE, crc,
                                short, short, len(raw), len(zip64) + len(padding)) + raw + zip64 + padding)
        total, check = 0, 0
        for chunk in chunks:
            total += len(chunk)
            check = zlib.crc32(chunk, check)
            self._write(chunk)
        if total != size or check != crc:
            raise ValueError(f"member {name[:80]!r}: {total} bytes written, {size} declared")
        self.written.append(_Written(raw, crc, size, header))

    def close(self) -> None:
        """Write the central directory and the end records."""
        start = self.offset
        for member in self.written:
            values = [v for v in (member.size, member.size, member.header) if v >= MAX32]
            wide = [MAX32 if v >= MAX32 else v for v in (member.size, member.size, member.header)]
            extra = struct.pack(f"<HH{len(values)}Q", ZIP64_EXTRA, 8 * len(values), *values)
            extra = extra if values else b""
            version = 45 if values else 20
            self._write(struct.pack(
                "<4sHHHHHHIIIHHHHHII", CENTRAL, version, version, UTF8_NAMES, 0, 0, DOS_DATE, member.crc,
                wide[1], wide[0], len(member.name), len(extra), 0, 0, 0, 0, wide[2],
            ) + member.name + extra)
        count, size = len(self.written), self.offset - start
        if count >= MAX16 or size >= MAX32 or start >= MAX32:
            record = self.offset
            self._write(struct.pack("<4sQHHIIQQQQ", END64, 44, 45, 45, 0, 0, count, count, size, start))
            self._write(struct.pack("<4sIQI", LOCATOR64, 0, record, 1))
        self._write(struct.pack("<4sHHHHIIH", END, 0, 0, min(count, MAX16), min(count, MAX16),
                                min(size, MAX32), min(start, MAX32), 0))

    def _write(self, data: bytes) -> None:
        self.f.write(data)
        self.offset += len(data)
