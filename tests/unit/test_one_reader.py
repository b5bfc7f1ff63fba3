"""One reader: what the static check reads is byte for byte what torch loads.

Zips that show ``zipfile`` one content and torch's own reader another are refused, by the check and
by the loader the worker's child runs; a real checkpoint is rewritten as a canonical archive from the
bytes the check read, and that rewrite (never the upload) is what torch opens, loading to identical
tensors and outputs."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch
import torchvision
from safetensors.torch import save_file
from torch import nn

from tests import crafted, hostile_zips
from tests.conftest import export_program
from zootriage.core.errors import CheckpointUnsafe, NotACheckpoint, TruncatedCheckpoint, ZooError
from zootriage.core.zoo import strict_zip
from zootriage.core.zoo.archive_check import check_file, checked_copy
from zootriage.core.zoo.canonical_zip import ALIGNMENT, CanonicalZip
from zootriage.core.zoo.loader import load_model
from zootriage.core.zoo.program_json import UnsafeProgram, check_model_json
from zootriage.core.zoo.refs import CheckpointRef
from zootriage.core.zoo.weights import read_state_dict

MODEL_JSON = "models/model.json"


def _ref(path: Path) -> CheckpointRef:
    if path.suffix == ".pt2":
        return CheckpointRef(path=str(path))
    return CheckpointRef(path=str(path), library="torchvision", architecture="resnet18")


def _refused(path: Path, error: type[ZooError], pattern: str) -> None:
    """Refused by the static check (the API's) and by the loader (the worker child's)."""
    with pytest.raises(error, match=pattern):
        check_file(path, path.name)
    with pytest.raises(error, match=pattern):
        load_model(_ref(path))


def _torch_record(path: Path, suffix: str) -> bytes:
    """A member as torch's own zip reader (PyTorchFileReader, miniz) reads it."""
    reader = torch._C.PyTorchFileReader(str(path))
    name = next(r for r in reader.get_all_records() if r.endswith(suffix))
    return bytes(reader.get_record(name))


def _zipfile_record(path: Path, suffix: str) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith(suffix)))


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.head = nn.Linear(4 * 7 * 7, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(nn.functional.max_pool2d(torch.relu(self.conv(x)), 4).flatten(1))


def test_two_central_directories_show_zipfile_a_harmless_program(
    digit_programs: dict[str, Path], tmp_path: Path
) -> None:
    harmless = digit_programs["ccexam"]
    marker = tmp_path / "sympy_ran"
    (tmp_path / "evil").mkdir()
    hostile = crafted.program_with_sympy_payload(harmless, tmp_path / "evil" / harmless.name, marker)
    both = hostile_zips.two_directories(harmless, hostile, tmp_path / "two.pt2")
    shown, loaded = _zipfile_record(both, MODEL_JSON), _torch_record(both, MODEL_JSON)
    assert shown == _zipfile_record(harmless, MODEL_JSON)  # zipfile reads the harmless program...
    assert loaded == _zipfile_record(hostile, MODEL_JSON)  # ...torch's reader the hostile one
    check_model_json(json.loads(shown))  # so a check reading with zipfile passed it
    with pytest.raises(UnsafeProgram, match="shape expression outside"):
        check_model_json(json.loads(loaded))
    _refused(both, CheckpointUnsafe, r"two\.pt2: the zip's central directory is not where its end record")
    assert not marker.exists()


def test_two_central_directories_in_a_state_dict(tmp_path: Path) -> None:
    torch.save({"w": torch.zeros(3)}, tmp_path / "m.pt")
    (tmp_path / "other").mkdir()
    torch.save({"w": torch.full((3,), 7.0)}, tmp_path / "other" / "m.pt")
    both = hostile_zips.two_directories(tmp_path / "m.pt", tmp_path / "other" / "m.pt", tmp_path / "two.pt")
    assert _zipfile_record(both, "data/0") == bytes(12)
    assert torch.load(both, weights_only=True)["w"].tolist() == [7.0, 7.0, 7.0]  # torch reads the other
    _refused(both, CheckpointUnsafe, "central directory is not where its end record says")


def test_prepended_record(digit_programs: dict[str, Path], tmp_path: Path) -> None:
    program = digit_programs["ccexam"]
    evil_json = crafted.sympy_expression(tmp_path / "ran").encode()
    hidden = hostile_zips.prepended(program, ("ccexam/models/model.json", evil_json), tmp_path / "pre.pt2")
    assert _zipfile_record(hidden, MODEL_JSON) == _zipfile_record(program, MODEL_JSON)
    _refused(hidden, CheckpointUnsafe, r"pre\.pt2: the zip has data before its first member")


def test_data_after_the_end_record(tmp_path: Path) -> None:
    torch.save({"w": torch.arange(4.0)}, tmp_path / "m.pt")
    appended = tmp_path / "tail.pt"
    appended.write_bytes((tmp_path / "m.pt").read_bytes() + b"junk" * 16)
    assert torch.load(appended, weights_only=True)["w"].tolist() == [0, 1, 2, 3]  # both readers skip it
    assert _zipfile_record(appended, "data/0") == _torch_record(appended, "data/0")
    fake_end = (tmp_path / "m.pt").read_bytes() + hostile_zips.end(0, 0, 0)  # a second end record
    with pytest.raises(RuntimeError, match="does not contain any files"):
        torch.load(io.BytesIO(fake_end), weights_only=True)  # torch's reader takes the last one
    (tmp_path / "fake_end.pt").write_bytes(fake_end)
    _refused(tmp_path / "fake_end.pt", CheckpointUnsafe, r"fake_end\.pt: the zip's central directory is not")
    _refused(appended, TruncatedCheckpoint, r"tail\.pt: .*does not end with a zip end record")


def test_a_nested_archive_with_two_directories(digit_programs: dict[str, Path], tmp_path: Path) -> None:
    """A program's sample inputs are a torch zip read by torch's zip reader too: checked the same way."""
    torch.save({"w": torch.zeros(3)}, tmp_path / "model.pt")
    (tmp_path / "other").mkdir()
    torch.save({"w": torch.ones(3)}, tmp_path / "other" / "model.pt")
    nested = hostile_zips.two_directories(tmp_path / "model.pt", tmp_path / "other" / "model.pt",
                                          tmp_path / "nested.pt").read_bytes()
    entries = [(n, nested if n.endswith("sample_inputs/model.pt") else d)
               for n, d in hostile_zips.members(digit_programs["ccexam"])]
    program = hostile_zips.write_plain(entries, tmp_path / "outer.pt2")
    pattern = r"outer\.pt2 \(data/sample_inputs/model\.pt\): the zip's central directory is not where"
    _refused(program, CheckpointUnsafe, pattern)


def test_overlapping_members(tmp_path: Path) -> None:
    torch.save({"w": torch.arange(4.0)}, tmp_path / "m.pt")
    overlap = hostile_zips.overlapping(tmp_path / "m.pt", tmp_path / "overlap.pt")
    with zipfile.ZipFile(overlap) as archive:  # every member reads with its CRC, from shared bytes
        assert archive.testzip() is None
    _refused(overlap, CheckpointUnsafe, r"overlap\.pt: the zip has overlapping or separated members")


def test_duplicate_names(digit_programs: dict[str, Path], tmp_path: Path) -> None:
    program = digit_programs["ccexam"]
    evil = crafted.sympy_expression(tmp_path / "ran").encode()
    twice = hostile_zips.duplicate_name(program, MODEL_JSON, evil, tmp_path / "twice.pt2")
    assert _zipfile_record(twice, MODEL_JSON) == evil  # zipfile's name table keeps the last
    _refused(twice, CheckpointUnsafe, r"twice\.pt2: the archive holds 'ccexam/models/model\.json' twice")
    torch.save({"w": torch.zeros(2)}, tmp_path / "m.pt")
    entries = hostile_zips.members(tmp_path / "m.pt")
    tensor = next(data for member, data in entries if member == "m/data/0")
    cased = hostile_zips.write_plain([*entries, ("m/DATA/0", tensor[::-1])], tmp_path / "c.pt")
    reader = torch._C.PyTorchFileReader(str(cased))
    assert bytes(reader.get_record("DATA/0")) == bytes(reader.get_record("data/0"))  # one member to torch
    _refused(cased, CheckpointUnsafe, r"c\.pt: the archive holds .* twice \(ignoring case\)")


@pytest.mark.parametrize("consistent", [False, True])
def test_zip64_sizes_that_lie(tmp_path: Path, consistent: bool) -> None:
    torch.save({"w": torch.arange(8.0)}, tmp_path / "m.pt")
    lying = hostile_zips.zip64_lying_sizes(tmp_path / "m.pt", "data/0", tmp_path / "z64.pt", consistent)
    assert len(_zipfile_record(lying, "data/0")) == 16  # 32 bytes stored, zip64 says 16
    pattern = "separated members" if consistent else "local header of 'm/data/0' disagrees"
    _refused(lying, CheckpointUnsafe, pattern)


def test_the_control_layout_is_accepted(tmp_path: Path) -> None:
    """The builders' own plain layout loads: the refusals above are for the one thing each changes."""
    torch.save({"w": torch.arange(8.0)}, tmp_path / "m.pt")
    plain = hostile_zips.write_plain(hostile_zips.members(tmp_path / "m.pt"), tmp_path / "plain.pt")
    check_file(plain, "plain.pt")
    (tmp_path / "copy").mkdir()
    copy = checked_copy(plain, "plain.pt", tmp_path / "copy")
    assert torch.load(copy, weights_only=True)["w"].tolist() == list(range(8))


def _records(path: Path) -> dict[str, bytes]:
    reader = torch._C.PyTorchFileReader(str(path))
    return {name: bytes(reader.get_record(name)) for name in reader.get_all_records()}


def _aligned(path: Path) -> bool:
    with open(path, "rb") as f:
        entries = strict_zip.read_directory(f, path.stat().st_size, path.name, 10_000, 256)
    return all(entry.data % ALIGNMENT == 0 for entry in entries)


def test_a_state_dict_survives_canonicalisation(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).eval()
    torch.save(model.state_dict(), tmp_path / "r.pt")
    deflated = tmp_path / "deflated" / "r.pt"  # also a compressed archive with data descriptors
    deflated.parent.mkdir()
    with zipfile.ZipFile(_Unseekable(deflated), "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in hostile_zips.members(tmp_path / "r.pt"):
            out.writestr(name, data)
    for source in (tmp_path / "r.pt", deflated):
        folder = source.parent / "checked"
        folder.mkdir()
        canonical = checked_copy(source, source.name, folder)
        assert canonical == folder / "r.pt" and canonical.read_bytes() != source.read_bytes()
        assert _records(canonical) == _records(tmp_path / "r.pt") and _aligned(canonical)
        loaded = torch.load(canonical, weights_only=True)
        for key, tensor in model.state_dict().items():
            assert torch.equal(loaded[key], tensor), key
    x = torch.rand(2, 3, 224, 224)
    with torch.inference_mode():
        _pen, logits = load_model(_ref(deflated)).module(x)
        torch.testing.assert_close(logits, model(x), rtol=0, atol=0)


class _Unseekable(io.RawIOBase):
    """A write-only file: zipfile then writes data descriptors, as a streaming writer would."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "wb")  # noqa: SIM115 - closed with the stream

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self.file.write(data)

    def close(self) -> None:
        self.file.close()
        super().close()


def test_a_program_survives_canonicalisation(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = SmallCNN().eval()
    path = export_program(model, tmp_path / "cnn.pt2", None, None)
    (tmp_path / "checked").mkdir()
    canonical = checked_copy(path, path.name, tmp_path / "checked")
    assert _records(canonical) != _records(path)  # the nested sample inputs were rewritten too...
    same = {k: v for k, v in _records(path).items() if not k.endswith("sample_inputs/model.pt")}
    assert {k: v for k, v in _records(canonical).items() if k in same} == same  # ...nothing else
    nested = io.BytesIO(_records(canonical)["data/sample_inputs/model.pt"])
    entries = strict_zip.read_directory(nested, len(nested.getvalue()), "nested", 100, 256)
    assert all(entry.data % ALIGNMENT == 0 for entry in entries) and _aligned(canonical)
    x = torch.rand(5, 1, 28, 28)
    with torch.inference_mode():
        exported = torch.export.load(canonical).module()(x)
        _pen, logits = load_model(CheckpointRef(path=str(path))).module(x)
        torch.testing.assert_close(exported, model(x), rtol=0, atol=0)
        torch.testing.assert_close(logits, model(x), rtol=0, atol=0)


def test_torch_never_opens_the_upload(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    torch.save(torchvision.models.resnet18(num_classes=3).state_dict(), tmp_path / "up.pt")
    opened: list[tuple[Path, bytes]] = []
    real = torch.load

    def spy(path: Path, **kwargs: Any) -> Any:
        opened.append((Path(path), Path(path).read_bytes()))
        return real(path, **kwargs)

    monkeypatch.setattr(torch, "load", spy)  # core.zoo.weights imports torch where it loads
    assert load_model(_ref(tmp_path / "up.pt")).info.num_classes == 3
    [(where, data)] = opened
    assert where != tmp_path / "up.pt" and data != (tmp_path / "up.pt").read_bytes()
    assert not where.exists()  # the rewrite lived only while torch read it


def test_many_members_get_zip64_end_records() -> None:
    buffer = io.BytesIO()
    writer = CanonicalZip(buffer)
    for i in range(70_000):
        writer.add(f"a/data/{i}", 0, 0, [])
    writer.close()
    data = buffer.getvalue()
    assert data[-22 - 20 : -22][:4] == strict_zip.LOCATOR64
    entries = strict_zip.read_directory(io.BytesIO(data), len(data), "many", 70_000, 256)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert [e.name for e in entries] == archive.namelist() == [f"a/data/{i}" for i in range(70_000)]


def _safetensors(path: Path, table: dict[str, Any], body: bytes) -> Path:
    raw = json.dumps(table).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + body)
    return path


def test_safetensors_tensors_must_tile_the_data(tmp_path: Path) -> None:
    save_file({"a": torch.zeros(4), "b": torch.ones(4)}, tmp_path / "good.safetensors")
    check_file(tmp_path / "good.safetensors", "good.safetensors")
    f32 = {"dtype": "F32", "shape": [4]}
    shared = _safetensors(tmp_path / "shared.safetensors",
                          {"a": {**f32, "data_offsets": [0, 16]}, "b": {**f32, "data_offsets": [8, 24]}},
                          bytes(24))
    with pytest.raises(CheckpointUnsafe, match=r"shared\.safetensors: tensors 'a' and 'b' share bytes"):
        check_file(shared, shared.name)
    with pytest.raises(CheckpointUnsafe, match="share bytes"):
        read_state_dict(shared)
    gap = _safetensors(tmp_path / "gap.safetensors",
                       {"a": {**f32, "data_offsets": [0, 16]}, "b": {**f32, "data_offsets": [20, 36]}},
                       bytes(36))
    with pytest.raises(NotACheckpoint, match=r"bytes 16\.\.20 are no tensor's"):
        check_file(gap, gap.name)
    tail = _safetensors(tmp_path / "tail.safetensors", {"a": {**f32, "data_offsets": [0, 16]}}, bytes(20))
    with pytest.raises(NotACheckpoint, match="4 bytes past its tensors"):
        check_file(tail, tail.name)
    raw = b'{"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, "a": {"dtype": "F32", ' \
          b'"shape": [2], "data_offsets": [0, 8]}}'
    (tmp_path / "dup.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(16))
    with pytest.raises(CheckpointUnsafe, match="names 'a' twice"):
        check_file(tmp_path / "dup.safetensors", "dup.safetensors")
