"""A dataset zip's central directory against what its end record declares, and names zipfile refuses.

``zipfile`` builds one ``ZipInfo`` per directory entry until the directory's byte size is used up, not
up to the count the end record declares: each archive here is built byte by byte to lie about that.
"""

from __future__ import annotations

import struct
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from zootriage.core.data.archives import ArchiveLimits, check_archive
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import parse_dataset_ref
from zootriage.core.errors import BadArchive


def _local(name: bytes, flags: int = 0) -> bytes:
    """A stored one-byte member's local header and data."""
    header = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, flags, 0, 0, 0, 0, 1, 1, len(name), 0)
    return header + name + b"x"


def _central(name: bytes, offset: int, flags: int = 0) -> bytes:
    fields = (20, 20, flags, 0, 0, 0, 0, 1, 1, len(name), 0, 0, 0, 0, 0, offset)
    return struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", *fields) + name


def _end(entries: int, directory: bytes, offset: int, zip64: bool) -> bytes:
    """The end record declaring ``entries``; with ``zip64`` the count and size are in a zip64 record and
    locator right before it (where ``zipfile`` reads them), the plain record holding the 0xFFFF markers."""
    if not zip64:
        return struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, entries, entries, len(directory), offset, 0)
    fields = (44, 45, 45, 0, 0, entries, entries, len(directory), offset)
    record = struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", *fields)
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, offset + len(directory), 1)
    plain = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return record + locator + plain


def _lying_zip(path: Path, declared: int, holds: int, zip64: bool = False) -> None:
    """Two images in class folders, then ``holds - 2`` minimal 47-byte entries (all pointing at the
    first member, which zipfile does not mind) under an end record declaring ``declared`` entries."""
    first, second = b"a/1.png", b"b/1.png"
    data = _local(first) + _local(second)
    directory = _central(first, 0) + _central(second, len(_local(first))) + _central(b"x", 0) * (holds - 2)
    path.write_bytes(data + directory + _end(declared, directory, len(data), zip64))


@pytest.mark.parametrize("zip64", [False, True])
def test_a_directory_holding_more_entries_than_declared_is_refused_before_zipfile_builds_them(
    tmp_path: Path, zip64: bool
) -> None:
    limits = ArchiveLimits(max_images=192)  # 400 members
    holds = 400 * (46 + 3 * 1024 + 64) // 47  # as many 47-byte entries as the old size bound let in
    _lying_zip(tmp_path / "many.zip", declared=400, holds=holds, zip64=zip64)
    with zipfile.ZipFile(tmp_path / "many.zip") as archive:
        assert len(archive.infolist()) == holds  # what zipfile alone would have built: 27,000 ZipInfos
    tracemalloc.start()
    try:
        with pytest.raises(BadArchive, match="holds more than 400 entries but declares 400"):
            check_archive("many.zip", [tmp_path], limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


def test_a_directory_holding_fewer_entries_than_declared_is_refused(tmp_path: Path) -> None:
    _lying_zip(tmp_path / "few.zip", declared=5, holds=3)
    with pytest.raises(BadArchive, match="holds 3 entries but declares 5"):
        check_archive("few.zip", [tmp_path], ArchiveLimits())


@pytest.mark.parametrize("zip64", [False, True])
def test_a_directory_matching_its_declared_count_is_accepted(tmp_path: Path, zip64: bool) -> None:
    _lying_zip(tmp_path / "honest.zip", declared=4, holds=4, zip64=zip64)
    assert len(check_archive("honest.zip", [tmp_path], ArchiveLimits()).members) == 4


def test_a_zip64_archive_written_by_zipfile_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 1)  # zipfile writes zip64 end records past this
    with zipfile.ZipFile(tmp_path / "z64.zip", "w") as archive:
        for k in range(4):
            archive.writestr(f"c{k % 2}/{k}.png", b"x")
    assert b"PK\x06\x06" in (tmp_path / "z64.zip").read_bytes()
    assert len(check_archive("z64.zip", [tmp_path], ArchiveLimits()).members) == 4


def test_a_name_flagged_utf8_that_is_not_utf8_is_a_bad_archive(tmp_path: Path) -> None:
    name = b"c/\xff.png"
    local = _local(name, flags=0x800)
    directory = _central(name, 0, flags=0x800)
    (tmp_path / "bad.zip").write_bytes(local + directory + _end(1, directory, len(local), zip64=False))
    with pytest.raises(BadArchive, match="flagged UTF-8 is not valid UTF-8"):
        check_archive("bad.zip", [tmp_path], ArchiveLimits())
    with pytest.raises(BadArchive, match="flagged UTF-8"):  # the worker's open runs the same checks first
        open_dataset(parse_dataset_ref("archive:bad.zip"), roots=[tmp_path])
