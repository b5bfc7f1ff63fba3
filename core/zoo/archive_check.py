"""The static check every uploaded weights file passes before any torch loader opens it. Pure Python.

What it proves, per format (each refusal is a ``core.errors`` code naming the user's file):

- ``.pt2`` (``torch.export.save``): a zip whose members all sit in one root folder and match the
  layout torch writes (models, weights, constants, sample inputs, extra files, version stamps); no
  AOTInductor / ExecuTorch / MTIA payloads, no shared libraries. Its JSON is parsed and checked
  (``core.zoo.program_json``); every pickled member (pickled weights and constants, sample inputs) is
  itself a torch file checked like a ``.pt``.
- ``.pt``/``.pth``/``.bin``: a torch zip (``data.pkl`` + raw storages) or a legacy pickle stream
  (five pickles then raw storages); every pickle is scanned (``core.zoo.pickle_scan``).
- ``.safetensors``: the header length is bounded, the header is a JSON table of tensors whose offsets
  lie inside the file and agree with their dtype and shape.

Zip bombs: member count and name length are bounded, and every member is decompressed in chunks with
the running total capped (``Bounds.total_bytes``), so a declared size is never trusted and nothing
larger than a chunk or a small JSON/pickle member is held in memory.
"""

from __future__ import annotations

import io
import json
import re
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from zootriage.core.errors import (
    CheckpointNeedsCode,
    CheckpointTooLarge,
    CheckpointUnsafe,
    NotACheckpoint,
    TruncatedCheckpoint,
)
from zootriage.core.zoo.pickle_scan import PickleMalformed, PickleRefused, scan_pickle
from zootriage.core.zoo.program_json import UnsafeProgram, check_model_json, payload_members

CHUNK = 1 << 20
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_MODEL = r"[A-Za-z0-9_]{1,128}"
PT2_MEMBERS = re.compile(
    "^(archive_format|archive_version|byteorder|\\.data/version|\\.data/serialization_id"
    f"|models/{_MODEL}\\.json|data/weights/{_MODEL}_weights_config\\.json|data/weights/weight_[0-9]{{1,9}}"
    f"|data/constants/{_MODEL}_constants_config\\.json|data/constants/tensor_[0-9]{{1,9}}"
    f"|data/sample_inputs/{_MODEL}\\.pt|extra/{_NAME})$"
)
TORCH_ZIP_MEMBERS = re.compile(
    r"^(data\.pkl|data/[0-9]{1,12}|version|\.data/version|byteorder|\.format_version"
    r"|\.storage_alignment|\.data/serialization_id)$"
)
SAFETENSORS_DTYPES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
    "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8, "C64": 8,
}
LEGACY_PICKLES = 5  # magic number, protocol version, system info, the object, its storage keys


@dataclass(frozen=True)
class Bounds:
    """Limits of the static check; ``total_bytes`` caps the bytes decompressed from all members together."""

    members: int = 10_000
    name_chars: int = 256
    total_bytes: int = 4 << 30
    expansion: int = 4  # decompressed bytes may be at most this many times the file size (+ json_bytes)
    json_bytes: int = 64 << 20
    pickle_bytes: int = 64 << 20
    header_bytes: int = 100_000_000


def check_file(path: Path, display_name: str, bounds: Bounds | None = None) -> None:
    """Refuse ``path`` unless it passes the static check for its suffix; ``display_name`` (the user's
    file name) is the only name in messages, so a server path never leaks."""
    limits = bounds or Bounds()
    suffix = Path(display_name).suffix.lower() or path.suffix.lower()
    if not path.is_file():
        raise NotACheckpoint(f"{display_name}: no such file")
    if suffix == ".safetensors":
        _check_safetensors(path, display_name, limits)
    elif suffix == ".pt2":
        _check_program(path, display_name, limits)
    elif suffix in (".pt", ".pth", ".bin"):
        with open(path, "rb") as f:
            _check_torch_file(f, path.stat().st_size, display_name, limits)
    else:
        raise NotACheckpoint(f"{display_name}: not a checkpoint format (.pt2, .safetensors, .pt, .pth, .bin)")


class _Zip:
    """A zip opened under the bounds: names checked once, members read with a shared byte budget."""

    def __init__(self, source: str | Path | IO[bytes], size: int, name: str, limits: Bounds) -> None:
        self.name = name
        self.limits = limits
        self.budget = min(limits.total_bytes, size * limits.expansion + limits.json_bytes)
        try:
            self.zf = zipfile.ZipFile(source)
        except zipfile.BadZipFile as exc:
            raise TruncatedCheckpoint(f"{name}: the zip archive is incomplete or corrupt ({exc})") from exc
        infos = self.zf.infolist()
        if len(infos) > limits.members:
            raise CheckpointTooLarge(f"{name}: {len(infos)} archive members, over the limit {limits.members}")
        seen: set[str] = set()
        for info in infos:
            member = info.filename
            unsafe = "\\" in member or "\0" in member or ".." in member.split("/")
            if len(member) > limits.name_chars or unsafe:
                raise CheckpointUnsafe(f"{name}: an archive member has an unsafe name {member[:80]!r}")
            if member in seen:
                raise CheckpointUnsafe(f"{name}: the archive holds {member[:80]!r} twice")
            if info.flag_bits & 1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise CheckpointUnsafe(f"{name}: {member[:80]!r} is encrypted or oddly compressed")
            seen.add(member)
        self.infos = {info.filename: info for info in infos}

    def root(self) -> str:
        """The one top folder every member sits in (torch writes ``<archive name>/...``)."""
        roots = {member.partition("/")[0] for member in self.infos}
        if len(roots) != 1 or any("/" not in member for member in self.infos):
            raise NotACheckpoint(f"{self.name}: the archive's members are not all in one folder")
        return roots.pop() + "/"

    def read(self, member: str, cap: int) -> bytes:
        """The member's bytes, refused past ``cap`` or past the archive's remaining budget."""
        parts: list[bytes] = []
        self._stream(member, cap, parts.append)
        return b"".join(parts)

    def drain(self, member: str) -> None:
        """Decompress and discard (raw tensor data): only the budget and the CRC are checked."""
        self._stream(member, self.budget, lambda _chunk: None)

    def _stream(self, member: str, cap: int, sink: Callable[[bytes], None]) -> None:
        total = 0
        try:
            with self.zf.open(self.infos[member]) as handle:
                while chunk := handle.read(CHUNK):
                    total += len(chunk)
                    self.budget -= len(chunk)
                    if total > cap or self.budget < 0:
                        raise CheckpointTooLarge(
                            f"{self.name}: {member.partition('/')[2] or member} decompresses to more than "
                            "the allowed size (a zip bomb?)"
                        )
                    sink(chunk)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise TruncatedCheckpoint(f"{self.name}: member {member[:80]!r} is corrupt ({exc})") from exc

    def json(self, member: str) -> Any:
        try:
            return json.loads(self.read(member, self.limits.json_bytes))
        except (ValueError, RecursionError) as exc:
            raise NotACheckpoint(f"{self.name}: {member.partition('/')[2]} is not valid JSON") from exc


def _check_program(path: Path, name: str, limits: Bounds) -> None:
    with open(path, "rb") as f:
        if f.read(2) != b"PK":
            raise NotACheckpoint(f"{name}: not a torch.export program (not a zip archive)")
    archive = _Zip(path, path.stat().st_size, name, limits)
    root = archive.root()
    members = {member[len(root):]: member for member in archive.infos if not member.endswith("/")}
    for relative in members:
        if not PT2_MEMBERS.match(relative):
            what = "a native library" if relative.endswith(".so") or "aotinductor" in relative else "a member"
            raise CheckpointUnsafe(
                f"{name}: the program holds {what} outside the torch.export layout ({relative[:80]!r}); "
                "only programs saved by torch.export.save are accepted"
            )
    stamp = members.get("archive_format")
    if stamp is None or archive.read(stamp, 16).strip() != b"pt2":
        raise NotACheckpoint(f"{name}: not a torch.export program (no archive_format 'pt2')")
    models = [r[len("models/"):-len(".json")] for r in members if r.startswith("models/")]
    if not models:
        raise NotACheckpoint(f"{name}: the program holds no models/*.json")
    pickled: set[str] = set()
    parsed = {"archive_format"}
    for model in models:
        parsed.add(f"models/{model}.json")
        try:
            check_model_json(archive.json(members[f"models/{model}.json"]))
            for kind, folder, prefix in (("weights", "data/weights/", "weight_"),
                                         ("constants", "data/constants/", "tensor_")):
                config = members.get(f"{folder}{model}_{kind}_config.json")
                if config is None:
                    raise NotACheckpoint(f"{name}: the program has no {kind} config for {model!r}")
                parsed.add(f"{folder}{model}_{kind}_config.json")
                for member, is_pickle in payload_members(archive.json(config), kind, prefix).items():
                    if folder + member not in members:
                        raise NotACheckpoint(f"{name}: its {kind} config names a missing {member!r}")
                    if is_pickle:
                        pickled.add(folder + member)
        except UnsafeProgram as exc:
            raise CheckpointUnsafe(f"{name}: {exc}") from exc
        sample = f"data/sample_inputs/{model}.pt"
        if sample not in members:
            raise NotACheckpoint(f"{name}: the program has no sample inputs for {model!r}")
        pickled.add(sample)
    for relative, member in members.items():
        if relative in parsed:
            continue
        if relative in pickled:
            _check_nested_torch(archive, member, name, relative)
        elif relative.endswith(".json"):
            archive.json(member)
        else:
            archive.drain(member)


def _check_nested_torch(archive: _Zip, member: str, name: str, relative: str) -> None:
    """A torch file stored inside the program (pickled weight, constant or sample inputs)."""
    data = archive.read(member, archive.budget)
    _check_torch_file(io.BytesIO(data), len(data), f"{name} ({relative})", archive.limits)


def _check_torch_file(f: IO[bytes], size: int, name: str, limits: Bounds) -> None:
    magic = f.read(4)
    f.seek(0)
    if magic[:2] == b"PK":
        _check_torch_zip(f, size, name, limits)
    elif magic[:1] == b"\x80":
        _check_legacy_pickle(f, name, limits)
    else:
        raise NotACheckpoint(f"{name}: not a checkpoint (neither a torch zip nor a pickle)")


def _check_torch_zip(f: IO[bytes], size: int, name: str, limits: Bounds) -> None:
    archive = _Zip(f, size, name, limits)
    root = archive.root()
    for member in archive.infos:
        relative = member[len(root):]
        if not TORCH_ZIP_MEMBERS.match(relative):
            raise CheckpointUnsafe(
                f"{name}: the torch archive holds {relative[:80]!r}, which a state_dict file does not "
                "(TorchScript code or extra files?)"
            )
    if root + "data.pkl" not in archive.infos:
        raise NotACheckpoint(f"{name}: the torch archive has no data.pkl")
    for member in archive.infos:
        if member == root + "data.pkl":
            _scan(archive.read(member, limits.pickle_bytes), name)
        else:
            archive.drain(member)


def _check_legacy_pickle(f: IO[bytes], name: str, limits: Bounds) -> None:
    """torch's pre-1.6 format: five pickles in a row, then raw storage bytes torch reads without
    unpickling. Each pickle is scanned from the stream; the raw tail is not parsed."""
    for _ in range(LEGACY_PICKLES):
        start = f.tell()
        _scan(f, name)
        if f.tell() - start > limits.pickle_bytes:
            raise CheckpointTooLarge(f"{name}: a pickle over {limits.pickle_bytes} bytes")


def _scan(data: bytes | IO[bytes], name: str) -> None:
    try:
        scan_pickle(data)
    except PickleRefused as exc:
        raise CheckpointNeedsCode(
            f"{name}: the pickle needs code to load ({exc}), refused; "
            "save model.state_dict() or a .safetensors file instead"
        ) from exc
    except PickleMalformed as exc:
        raise TruncatedCheckpoint(f"{name}: the pickle ends early or is corrupt ({exc})") from exc


def _check_safetensors(path: Path, name: str, limits: Bounds) -> None:
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise TruncatedCheckpoint(f"{name}: {size} bytes, too short for a safetensors header")
        (header_len,) = struct.unpack("<Q", head)
        if header_len > limits.header_bytes:
            raise NotACheckpoint(f"{name}: not a safetensors file (no valid header)")
        if header_len > size - 8:
            raise TruncatedCheckpoint(f"{name}: the header runs past the end of the file")
        try:
            header = json.loads(f.read(header_len))
        except (ValueError, RecursionError) as exc:
            raise NotACheckpoint(f"{name}: not a safetensors file (header is not JSON)") from exc
    if not isinstance(header, dict):
        raise NotACheckpoint(f"{name}: not a safetensors file (header is not a JSON object)")
    data_size = size - 8 - header_len
    for key, entry in header.items():
        if key == "__metadata__":
            if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
                raise NotACheckpoint(f"{name}: not a safetensors file (metadata is not text)")
            continue
        end = _safetensors_entry(entry, key, name)
        if end > data_size:
            raise TruncatedCheckpoint(f"{name}: {size} bytes, its header describes {8 + header_len + end}")


def _safetensors_entry(entry: Any, key: str, name: str) -> int:
    """The end offset of one tensor, after checking dtype, shape and offsets agree."""
    bad = NotACheckpoint(f"{name}: not a safetensors file (malformed entry {key[:80]!r})")
    if not isinstance(entry, dict) or entry.get("dtype") not in SAFETENSORS_DTYPES:
        raise bad
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise bad
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets):
        raise bad
    start, end = offsets
    numel = 1
    for d in shape:
        numel *= d
    if not 0 <= start <= end or end - start != numel * SAFETENSORS_DTYPES[entry["dtype"]]:
        raise bad
    return int(end)


METADATA_BYTES = 64 * 1024


def program_extra(path: Path, display_name: str, member: str) -> bytes | None:
    """The bytes of the extra file ``member`` of a ``.pt2`` that passed ``check_file``, read by zipfile
    alone (at most ``METADATA_BYTES``), or None when the program carries none: how the API reads a
    program's description without a torch loader."""
    archive = _Zip(path, path.stat().st_size, display_name, Bounds())
    wanted = archive.root() + "extra/" + member
    return archive.read(wanted, METADATA_BYTES) if wanted in archive.infos else None
