"""Sizes a hostile checkpoint declares are bounded before anything is allocated or multiplied out.

Each file is built here, byte by byte where torch would never write it, and must get a refusal of the
project's own (a 4xx), never a ``MemoryError``, a ``struct.error`` or a minute of CPU: a legacy pickle
declaring a 2**62-byte argument, a zip64 member with a data descriptor, a safetensors shape of huge
rank and huge dimensions, a program whose nested torch file inflates past the pickle limit."""

from __future__ import annotations

import io
import json
import pickle
import struct
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from zootriage.core.errors import CheckpointTooLarge, CheckpointUnsafe, NotACheckpoint, TruncatedCheckpoint
from zootriage.core.zoo import strict_zip
from zootriage.core.zoo.archive_check import SAFETENSORS_MAX_RANK, Bounds, check_file, checked_copy
from zootriage.core.zoo.pickle_scan import MAX_MEMO

# Opcodes whose argument is a length the pickle declares, with the largest length each can declare.
DECLARED_LENGTHS = {
    "BINBYTES8": b"\x8e" + struct.pack("<Q", 2**62),
    "BINUNICODE8": b"\x8d" + struct.pack("<Q", 2**62),
    "BYTEARRAY8": b"\x96" + struct.pack("<Q", 2**62),
    "BINBYTES": b"B" + struct.pack("<I", 2**32 - 1),
    "BINUNICODE": b"X" + struct.pack("<I", 2**32 - 1),
    "BINSTRING": b"T" + struct.pack("<i", 2**31 - 1),
    "LONG4": b"\x8b" + struct.pack("<i", 2**31 - 1),
}


@pytest.mark.parametrize("opcode", sorted(DECLARED_LENGTHS))
def test_a_legacy_pickle_declaring_a_huge_argument(tmp_path: Path, opcode: str) -> None:
    """A 12-byte file whose pickle says its next argument is up to 2**62 bytes long: a short pickle."""
    path = tmp_path / "a.pt"
    path.write_bytes(b"\x80\x04" + DECLARED_LENGTHS[opcode] + b"x")
    with pytest.raises(TruncatedCheckpoint, match=r"a\.pt: the pickle ends early or is corrupt"):
        check_file(path, "a.pt")


def _legacy(path: Path, payload: bytes) -> Path:
    """torch's legacy layout: five pickles in a row (the fourth the object), then the raw tail."""
    parts = [pickle.dumps(x, protocol=4) for x in (0x1950A86A20F9469CFC6C, 1001, {}, payload, [])]
    path.write_bytes(b"".join(parts) + b"raw storage bytes")
    return path


def test_a_legacy_pickle_is_bounded_by_the_limit_not_by_the_file(tmp_path: Path) -> None:
    small = _legacy(tmp_path / "small.pt", b"x" * 900)
    check_file(small, "small.pt", Bounds(pickle_bytes=1000))
    large = _legacy(tmp_path / "large.pt", b"x" * 5000)
    with pytest.raises(CheckpointTooLarge, match=r"large\.pt: a pickle over 1000 bytes"):
        check_file(large, "large.pt", Bounds(pickle_bytes=1000))
    cut = tmp_path / "cut.pt"
    cut.write_bytes(large.read_bytes()[:800])  # ends inside the fourth pickle, within the limit
    with pytest.raises(TruncatedCheckpoint, match=r"cut\.pt: the pickle ends early"):
        check_file(cut, "cut.pt", Bounds(pickle_bytes=1000))


def _zip64_with_descriptor(descriptor_sizes: str) -> bytes:
    """One deflated member with a data descriptor (flag bit 3), whose directory entry says (in its
    zip64 extra) it inflates to 2**33 bytes; it holds 6. The descriptor repeats the directory's sizes
    in the 24-byte form, or in the 16-byte form, which cannot hold 2**33."""
    name, raw = b"a/data.pkl", b"\x80\x02}q\x00."
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = deflate.compress(raw) + deflate.flush()
    crc, size = zlib.crc32(raw), 2**33
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 45, 0x08, 8, 0, 0, 0, 0, 0, len(name), 0) + name
    sizes = struct.pack("<IQQ", crc, len(packed), size) if descriptor_sizes == "8-byte" \
        else struct.pack("<III", crc, len(packed), size & 0xFFFFFFFF)
    body = local + packed + b"PK\x07\x08" + sizes
    extra = struct.pack("<HHQ", 1, 8, size)
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 45, 45, 0x08, 8, 0, 0, crc, len(packed),
                          0xFFFFFFFF, len(name), len(extra), 0, 0, 0, 0, 0) + name + extra
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(body), 0)
    return body + central + end


def test_a_zip64_member_with_a_data_descriptor(tmp_path: Path) -> None:
    data = _zip64_with_descriptor("8-byte")
    [entry] = strict_zip.read_directory(io.BytesIO(data), len(data), "x.pt", 10, 256)
    assert entry.size == 2**33 and entry.end == len(data) - 22 - 46 - len(entry.name) - 12
    (tmp_path / "x.pt").write_bytes(data)
    with pytest.raises(TruncatedCheckpoint, match=r"x\.pt: .*'a/data\.pkl' fails its size or CRC check"):
        check_file(tmp_path / "x.pt", "x.pt")
    (tmp_path / "short.pt").write_bytes(_zip64_with_descriptor("4-byte"))
    with pytest.raises(CheckpointUnsafe, match=r"short\.pt: the local header of 'a/data\.pkl' disagrees"):
        check_file(tmp_path / "short.pt", "short.pt")


def _safetensors(path: Path, shape: list[int], data: bytes, dtype: str = "F32") -> Path:
    header = json.dumps({"w": {"dtype": dtype, "shape": shape, "data_offsets": [0, len(data)]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def test_safetensors_shapes_are_multiplied_out_under_bounds(tmp_path: Path) -> None:
    save_file({"e": torch.zeros(5, 0), "v": torch.zeros(1, 2, 1, 3, 1)}, tmp_path / "ok.safetensors")
    check_file(tmp_path / "ok.safetensors", "ok.safetensors")
    deep = _safetensors(tmp_path / "deep.safetensors", [1] * (SAFETENSORS_MAX_RANK + 1), bytes(4))
    wide = _safetensors(tmp_path / "wide.safetensors", [0, 10**30], b"")  # 0 elements, one absurd dimension
    for bad in (deep, wide):
        with pytest.raises(NotACheckpoint, match=r"not a safetensors file \(malformed entry 'w'\)"):
            check_file(bad, bad.name)
    nines = int("9" * 4000)  # the audit's header: 1,000 such dimensions took 49 s to multiply out
    costly = _safetensors(tmp_path / "nines.safetensors", [nines] * 1000, bytes(4))
    started = time.monotonic()
    with pytest.raises(NotACheckpoint, match="malformed entry 'w'"):
        check_file(costly, costly.name)
    assert time.monotonic() - started < 5


def _program(path: Path, sample_inputs: bytes) -> Path:
    """A minimal ``.pt2`` (no graph, no weights) whose sample inputs are ``sample_inputs``, deflated."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("m/archive_format", "pt2")
        archive.writestr("m/models/m.json", json.dumps({"graph_module": {}}))
        archive.writestr("m/data/weights/m_weights_config.json", json.dumps({"config": {}}))
        archive.writestr("m/data/constants/m_constants_config.json", json.dumps({"config": {}}))
        archive.writestr("m/data/sample_inputs/m.pt", sample_inputs)
    return path


def test_a_nested_torch_file_is_held_to_the_pickle_limit(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    torch.save(((torch.zeros(1, 3),), {}), buffer)
    small = _program(tmp_path / "small.pt2", buffer.getvalue())
    check_file(small, "small.pt2")
    (tmp_path / "copy").mkdir()
    assert checked_copy(small, "small.pt2", tmp_path / "copy").is_file()
    # 80 MiB of zeros: a 80 KB upload whose sample inputs would be read whole (twice) to be checked
    inflating = _program(tmp_path / "big.pt2", bytes(80 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointTooLarge, match=r"big\.pt2: data/sample_inputs/m\.pt is a torch file of "
                                                     r"83886080 bytes; one stored inside a program may hold"):
            check_file(inflating, "big.pt2")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
    with pytest.raises(CheckpointTooLarge, match=r"m\.pt is a torch file of 83886080 bytes"):
        check_file(inflating, "big.pt2", Bounds(expansion=10**6))


def test_a_pickle_of_memo_entries_alone_is_refused_with_its_memory_bounded(tmp_path: Path) -> None:
    """Every memo entry costs the scan a dict slot: a pickle that only pushes and memoises (4 bytes
    an entry) is refused at ``MAX_MEMO`` entries, its scan's traced memory far below the GiBs that the
    whole 64 MiB of it would have held; a real state_dict's pickle is scanned as before."""
    body = (b"N\x94" * (MAX_MEMO + 10))  # NONE, MEMOIZE
    path = tmp_path / "memo.pt"
    path.write_bytes(b"\x80\x04" + body + b".")
    tracemalloc.start()
    try:
        with pytest.raises(TruncatedCheckpoint, match=f"memoises more than {MAX_MEMO} objects"):
            check_file(path, "memo.pt")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 48 << 20, peak  # ~250 bytes an entry up to the cap, then refused
    real = tmp_path / "real.pt"
    state = {f"layer{i}.weight": torch.zeros(2) for i in range(300)}
    torch.save(state, real, _use_new_zipfile_serialization=False)
    check_file(real, "real.pt")
