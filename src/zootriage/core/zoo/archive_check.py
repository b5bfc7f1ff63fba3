"""The static check every uploaded weights file passes before any torch loader opens it. Pure Python.

What it proves, per format (each refusal is a ``core.errors`` code naming the user's file):

- ``.pt2`` (``torch.export.save``): a zip whose members all sit in one root folder and match the
  layout torch writes (models, weights, constants, sample inputs, extra files, version stamps); no
  AOTInductor / ExecuTorch / MTIA payloads, no shared libraries. Its JSON is parsed and checked
  (``core.zoo.program_json``); every pickled member (pickled weights and constants, sample inputs) is
  itself a torch file checked like a ``.pt``.
- ``.pt``/``.pth``/``.bin``: a torch zip (``data.pkl`` + raw storages) or a legacy pickle stream
  (five pickles then raw storages); every pickle is scanned (``core.zoo.pickle_scan``).
- ``.safetensors``: the header length is bounded, the header is a JSON table of tensors (no key twice)
  whose offsets agree with their dtype and shape and tile the data area: no tensor overlaps another,
  no byte belongs to none.

One reader: zips are read by ``core.zoo.strict_zip`` only, which refuses any archive two readers could
read differently, and each member is read exactly once. ``checked_copy`` writes the bytes it read into
a canonical archive (``core.zoo.canonical_zip``; a nested torch zip is rewritten too), and the loader
hands torch that archive, never the upload: what torch loads is byte for byte what was checked.

Zip bombs: member count and name length are bounded, and every member is decompressed in chunks with
the running total capped (``Bounds.total_bytes``), so a declared size is never trusted and nothing
larger than a chunk or a small JSON/pickle member is held in memory: a pickle (``data.pkl``, each
pickle of a legacy stream) and a torch file nested in a program are read whole, to check them, only
up to ``Bounds.pickle_bytes``.
"""

from __future__ import annotations

import io
import json
import re
import struct
import zlib
from collections.abc import Iterator
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
from zootriage.core.zoo import strict_zip
from zootriage.core.zoo.canonical_zip import CanonicalZip
from zootriage.core.zoo.pickle_scan import PickleIncomplete, PickleMalformed, PickleRefused, scan_pickle
from zootriage.core.zoo.program_json import UnsafeProgram, check_model_json, payload_members

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
# Most dimensions a safetensors tensor may have. Real weights have at most 5 (3-d convolutions);
# bounding the rank (with each dimension) keeps multiplying a hostile shape out cheap.
SAFETENSORS_MAX_RANK = 16


@dataclass(frozen=True)
class Bounds:
    """Limits of the static check; ``total_bytes`` caps the bytes decompressed from all members together."""

    members: int = 10_000
    name_chars: int = 256
    total_bytes: int = 4 << 30
    expansion: int = 4  # decompressed bytes may be at most this many times the file size (+ json_bytes)
    json_bytes: int = 64 << 20
    pickle_bytes: int = 64 << 20  # a pickle, or a torch file nested in a program: each is read whole
    header_bytes: int = 100_000_000


def check_file(path: Path, display_name: str, bounds: Bounds | None = None) -> None:
    """Refuse ``path`` unless it passes the static check for its suffix; ``display_name`` (the user's
    file name) is the only name in messages, so a server path never leaks."""
    _check(path, display_name, bounds or Bounds(), None)


def checked_copy(path: Path, display_name: str, folder: Path, bounds: Bounds | None = None) -> Path:
    """``check_file``, and the file a torch loader may open: for a zip, a canonical archive written
    in ``folder`` (under ``path``'s name) from exactly the bytes the check read, so that torch never
    reads the upload itself (``core.zoo.canonical_zip``); a legacy pickle or a ``.safetensors`` file,
    which torch reads as the check did, is ``path`` itself."""
    target = folder / path.name
    if _check(path, display_name, bounds or Bounds(), target):
        return target
    return path


def _check(path: Path, display_name: str, limits: Bounds, target: Path | None) -> bool:
    """The check; with ``target``, a zip's canonical rewrite is written there. Whether it was."""
    suffix = Path(display_name).suffix.lower() or path.suffix.lower()
    if not path.is_file():
        raise NotACheckpoint(f"{display_name}: no such file")
    if suffix == ".safetensors":
        _check_safetensors(path, display_name, limits)
        return False
    if suffix not in (".pt2", ".pt", ".pth", ".bin"):
        raise NotACheckpoint(f"{display_name}: not a checkpoint format (.pt2, .safetensors, .pt, .pth, .bin)")
    with open(path, "rb") as f:
        if suffix == ".pt2" and f.read(2) != b"PK":
            raise NotACheckpoint(f"{display_name}: not a torch.export program (not a zip archive)")
        f.seek(0)
        zipped = f.read(4) == strict_zip.LOCAL
        f.seek(0)
        if target is None or not zipped:
            _check_any(f, path.stat().st_size, display_name, limits, suffix, None)
            return False
        try:
            with open(target, "wb") as out:
                writer = CanonicalZip(out)
                _check_any(f, path.stat().st_size, display_name, limits, suffix, writer)
                writer.close()
            with open(target, "rb") as written:  # the new file has the one reading it was written with
                strict_zip.read_directory(written, target.stat().st_size, display_name, limits.members,
                                          limits.name_chars)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
    return True


def _check_any(
    f: IO[bytes], size: int, name: str, limits: Bounds, suffix: str, out: CanonicalZip | None
) -> None:
    if suffix == ".pt2":
        _check_program(_Zip(f, size, name, limits, out), name)
    else:
        _check_torch_file(f, size, name, limits, out)


class _Zip:
    """A zip read under the bounds by the one reader (``core.zoo.strict_zip``): names checked once,
    each member read exactly once with a shared byte budget and, when ``out`` is given, written there
    as read (``keep=False`` leaves writing to the caller: a nested archive is written as rewritten)."""

    def __init__(self, f: IO[bytes], size: int, name: str, limits: Bounds, out: CanonicalZip | None) -> None:
        self.f = f
        self.name = name
        self.limits = limits
        self.out = out
        self.budget = min(limits.total_bytes, size * limits.expansion + limits.json_bytes)
        entries = strict_zip.read_directory(f, size, name, limits.members, limits.name_chars)
        self.infos = {entry.name: entry for entry in entries}
        self.done: set[str] = set()

    def root(self) -> str:
        """The one top folder every member sits in (torch writes ``<archive name>/...``)."""
        roots = {member.partition("/")[0] for member in self.infos}
        if len(roots) != 1 or any("/" not in member for member in self.infos):
            raise NotACheckpoint(f"{self.name}: the archive's members are not all in one folder")
        return roots.pop() + "/"

    def read(self, member: str, cap: int, keep: bool = True) -> bytes:
        """The member's bytes, refused past ``cap`` or past the archive's remaining budget."""
        data = b"".join(self._chunks(member, cap))
        if keep:
            self.keep(member, data)
        return data

    def keep(self, member: str, data: bytes) -> None:
        """Write ``data`` as ``member`` of the canonical archive."""
        if self.out is not None:
            self.out.add(member, len(data), zlib.crc32(data), [data])

    def drain(self, member: str) -> None:
        """Decompress (raw tensor data): only the budget, the size and the CRC are checked."""
        chunks = self._chunks(member, self.budget)
        if self.out is None:
            for _chunk in chunks:
                pass
        else:
            entry = self.infos[member]
            self.out.add(member, entry.size, entry.crc, chunks)

    def finish(self) -> None:
        """Every member the checks did not read is drained, so the canonical archive holds them all."""
        for member in self.infos:
            if member not in self.done:
                self.drain(member)

    def _chunks(self, member: str, cap: int) -> Iterator[bytes]:
        if member in self.done:
            raise AssertionError(f"{member!r} read twice")  # one reading per member, by construction
        self.done.add(member)
        total = 0
        for chunk in strict_zip.chunks(self.f, self.infos[member], self.name):
            total += len(chunk)
            self.budget -= len(chunk)
            if total > cap or self.budget < 0:
                raise CheckpointTooLarge(
                    f"{self.name}: {member.partition('/')[2] or member} decompresses to more than "
                    "the allowed size (a zip bomb?)"
                )
            yield chunk

    def json(self, member: str) -> Any:
        try:
            return json.loads(self.read(member, self.limits.json_bytes))
        except (ValueError, RecursionError) as exc:
            raise NotACheckpoint(f"{self.name}: {member.partition('/')[2]} is not valid JSON") from exc


def _check_program(archive: _Zip, name: str) -> None:
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
    archive.finish()


def _check_nested_torch(archive: _Zip, member: str, name: str, relative: str) -> None:
    """A torch file stored inside the program (pickled weight, constant or sample inputs); a nested
    zip goes into the canonical program rewritten itself, since torch reads it with its zip reader too.

    It is checked in memory, so it is held to ``Bounds.pickle_bytes`` like a pickle: refused from the
    size its entry declares (which ``core.zoo.strict_zip`` holds the member to) before anything is
    decompressed. torch.export pickles only a tensor it cannot store raw (a subclass), and sample inputs.
    """
    limit = archive.limits.pickle_bytes
    if archive.infos[member].size > limit:
        raise CheckpointTooLarge(
            f"{name}: {relative} is a torch file of {archive.infos[member].size} bytes; one stored inside "
            f"a program may hold at most {limit}"
        )
    data = archive.read(member, limit, keep=False)
    if archive.out is None or data[:4] != strict_zip.LOCAL:
        _check_torch_file(io.BytesIO(data), len(data), f"{name} ({relative})", archive.limits, None)
        archive.keep(member, data)
        return
    rewritten = io.BytesIO()
    writer = CanonicalZip(rewritten)
    _check_torch_file(io.BytesIO(data), len(data), f"{name} ({relative})", archive.limits, writer)
    writer.close()
    archive.keep(member, rewritten.getvalue())


def _check_torch_file(f: IO[bytes], size: int, name: str, limits: Bounds, out: CanonicalZip | None) -> None:
    """A ``.pt``: torch reads a zip when the file starts with a local header (``torch.serialization.
    _is_zipfile``), else a legacy pickle stream; the check decides the same way."""
    magic = f.read(4)
    f.seek(0)
    if magic == strict_zip.LOCAL:
        _check_torch_zip(_Zip(f, size, name, limits, out), name, limits)
    elif magic[:2] == b"PK":
        raise TruncatedCheckpoint(f"{name}: the zip archive is incomplete or corrupt (no member first)")
    elif magic[:1] == b"\x80":
        _check_legacy_pickle(f, name, limits)
    else:
        raise NotACheckpoint(f"{name}: not a checkpoint (neither a torch zip nor a pickle)")


def _check_torch_zip(archive: _Zip, name: str, limits: Bounds) -> None:
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
    archive.finish()


def _check_legacy_pickle(f: IO[bytes], name: str, limits: Bounds) -> None:
    """torch's pre-1.6 format: five pickles in a row, then raw storage bytes torch reads without
    unpickling; the raw tail is not parsed.

    Each pickle is scanned from the next ``pickle_bytes`` + 1 bytes of the file, read into memory:
    never from the file itself, where a length the pickle declares would be allocated before it is
    compared with anything (``core.zoo.pickle_scan``). A pickle that does not end within them is over
    the limit. (No more is read than the file holds: ``read(n)`` allocates ``n`` bytes first.)"""
    start = f.tell()
    end = f.seek(0, io.SEEK_END)
    for _ in range(LEGACY_PICKLES):
        f.seek(start)
        window = f.read(min(limits.pickle_bytes + 1, end - start))
        start += _scan(window, name, limits.pickle_bytes)
    f.seek(start)


def _scan(data: bytes, name: str, limit: int | None = None) -> int:
    """Scan the pickle that starts ``data``, refusing in ``core.errors`` terms; its length. With
    ``limit``, ``data`` may be only the first ``limit`` + 1 bytes of a longer file, and a pickle longer
    than ``limit`` is refused (one that runs past ``data`` is then too large, not cut short)."""
    try:
        length = scan_pickle(data)
    except PickleRefused as exc:
        raise CheckpointNeedsCode(
            f"{name}: the pickle needs code to load ({exc}), refused; "
            "save model.state_dict() or a .safetensors file instead"
        ) from exc
    except PickleMalformed as exc:
        if limit is not None and len(data) > limit and isinstance(exc, PickleIncomplete):
            raise CheckpointTooLarge(f"{name}: a pickle over {limit} bytes") from exc
        raise TruncatedCheckpoint(f"{name}: the pickle ends early or is corrupt ({exc})") from exc
    if limit is not None and length > limit:
        raise CheckpointTooLarge(f"{name}: a pickle over {limit} bytes")
    return length


def _check_safetensors(path: Path, name: str, limits: Bounds) -> None:
    """The header, then the tensors' byte ranges: they must tile the data area exactly, as the
    safetensors library requires, so no two tensors share bytes and no bytes hide between them."""
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
            header = json.loads(f.read(header_len), object_pairs_hook=_unique_keys)
        except _RepeatedKey as exc:
            raise CheckpointUnsafe(f"{name}: the safetensors header names {str(exc)[:80]!r} twice") from exc
        except (ValueError, RecursionError) as exc:
            raise NotACheckpoint(f"{name}: not a safetensors file (header is not JSON)") from exc
    if not isinstance(header, dict):
        raise NotACheckpoint(f"{name}: not a safetensors file (header is not a JSON object)")
    data_size = size - 8 - header_len
    ranges: list[tuple[int, int, str]] = []
    for key, entry in header.items():
        if key == "__metadata__":
            if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
                raise NotACheckpoint(f"{name}: not a safetensors file (metadata is not text)")
            continue
        start, end = _safetensors_entry(entry, key, name, header_len, data_size)
        ranges.append((start, end, key))
    covered, last = 0, ""
    for start, end, key in sorted(ranges):
        if start < covered:
            raise CheckpointUnsafe(f"{name}: tensors {last[:80]!r} and {key[:80]!r} share bytes")
        if start > covered:
            raise NotACheckpoint(f"{name}: not a safetensors file (bytes {covered}..{start} are no tensor's)")
        covered, last = end, key
    if covered != data_size:
        raise NotACheckpoint(f"{name}: not a safetensors file ({data_size - covered} bytes past its tensors)")


class _RepeatedKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused when a key repeats: JSON parsers disagree on which value wins."""
    table: dict[str, Any] = {}
    for key, value in pairs:
        if key in table:
            raise _RepeatedKey(key)
        table[key] = value
    return table


def _safetensors_entry(entry: Any, key: str, name: str, header_len: int, data_size: int) -> tuple[int, int]:
    """The byte range of one tensor in the data area (``data_size`` bytes, after the 8-byte length and
    ``header_len`` bytes of header), after checking dtype, shape and offsets agree.

    JSON integers are unbounded, so the shape is multiplied out only under bounds: at most
    ``SAFETENSORS_MAX_RANK`` dimensions, each no larger than the data area, and the product stops as
    soon as it passes the tensor's byte range (a header of 1,000 dimensions of 4,000 digits each
    would otherwise cost most of a minute of big-integer products)."""
    bad = NotACheckpoint(f"{name}: not a safetensors file (malformed entry {key[:80]!r})")
    if not isinstance(entry, dict) or entry.get("dtype") not in SAFETENSORS_DTYPES:
        raise bad
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets):
        raise bad
    start, end = offsets
    if not 0 <= start <= end:
        raise bad
    if end > data_size:
        raise TruncatedCheckpoint(
            f"{name}: {8 + header_len + data_size} bytes, its header describes {8 + header_len + end}"
        )
    if not isinstance(shape, list) or len(shape) > SAFETENSORS_MAX_RANK:
        raise bad
    if not all(type(d) is int and 0 <= d <= data_size for d in shape):
        raise bad
    nbytes = 0 if 0 in shape else SAFETENSORS_DTYPES[entry["dtype"]]
    for d in shape:
        nbytes *= d
        if nbytes > end - start:
            raise bad
    if nbytes != end - start:
        raise bad
    return int(start), int(end)


METADATA_BYTES = 64 * 1024


def program_extra(path: Path, display_name: str, member: str) -> bytes | None:
    """The bytes of the extra file ``member`` of a ``.pt2`` that passed ``check_file``, read by the
    check's own zip reader (at most ``METADATA_BYTES``), or None when the program carries none: how the
    API reads a program's description without a torch loader."""
    with open(path, "rb") as f:
        archive = _Zip(f, path.stat().st_size, display_name, Bounds(), None)
        wanted = archive.root() + "extra/" + member
        return archive.read(wanted, METADATA_BYTES) if wanted in archive.infos else None
