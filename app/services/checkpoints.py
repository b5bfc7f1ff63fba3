"""Uploaded checkpoints: accepted after the static check only (``core.zoo.archive_check``).

The API process never opens an upload with a torch loader and never builds a model: whether a
state_dict fits its architecture, or a program runs, is learnt when a job loads it in the worker's
isolated child (``core.isolation``). Files are kept as ``<sha256><suffix>`` in the upload folder
(see ``app.references``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.api.errors import ApiError
from app.labels import BadLabel, check_name, parse_tags
from app.references import FORMATS
from app.services.uploads import ReceivedFile
from core.zoo.archive_check import check_file, program_extra
from core.zoo.preprocess import Preprocess
from core.zoo.program_metadata import LABEL_SPACE, METADATA_FILE, ProgramMetadata, parse_metadata

LIBRARIES = ("torchvision", "timm")


def suffix_of(filename: str | None) -> str:
    suffix = Path(filename or "").suffix.lower()
    if suffix not in FORMATS:
        raise ApiError(422, "unsupported_format", f"checkpoint file names end in one of {sorted(FORMATS)}")
    return suffix


def check_fields(library: str | None, architecture: str | None, suffix: str) -> None:
    """A state_dict names its library architecture; a program may describe itself with a free
    ``architecture`` (no library), which its own ``zootriage.json`` overrides."""
    if (library is None) != (architecture is None) and suffix != ".pt2":
        raise ApiError(422, "invalid_upload", "'library' and 'architecture' go together")
    if architecture is not None and len(architecture) > 128:
        raise ApiError(422, "invalid_upload", "'architecture' has at most 128 characters")
    if library is not None and library not in LIBRARIES:
        raise ApiError(422, "invalid_upload", f"'library' is one of {LIBRARIES}")
    if library is not None and suffix == ".pt2":
        raise ApiError(422, "invalid_upload", "a .pt2 program carries its own architecture")
    if library is not None and architecture is not None and not _known(library, architecture):
        raise ApiError(422, "unknown_model", f"{library} has no architecture {architecture!r}")


def _known(library: str, architecture: str) -> bool:
    """Whether the library lists the name (its registry only: nothing is built)."""
    if library == "torchvision":
        import torchvision

        return architecture in torchvision.models.list_models(module=torchvision.models)
    import timm

    return bool(timm.is_model(architecture.partition(".")[0]))


def display_name(received: ReceivedFile, suffix: str) -> str:
    """The user's file name without any folder part: the only name messages and records show."""
    return Path(received.filename or "").name[:255] or f"upload{suffix}"


def validate(received: ReceivedFile, suffix: str) -> ProgramMetadata:
    """The static allow-list check, then (for a program) its ``zootriage.json`` read without torch;
    refusals carry core's code and name the user's file only."""
    name = display_name(received, suffix)
    check_file(received.path, name)
    if suffix != ".pt2":
        return ProgramMetadata()
    return parse_metadata(program_extra(received.path, name, METADATA_FILE), name)


@dataclass(frozen=True)
class Described:
    """What the upload's form fields say about the checkpoint (each optional)."""

    name: str | None
    tags: dict[str, str]
    preprocess: dict[str, Any] | None
    label_space: str | None


def described(fields: dict[str, str]) -> Described:
    """``name``, ``tags`` (``k=v,k=v``), ``preprocess`` (JSON, ``core.zoo.preprocess.Preprocess``) and
    ``label_space``, each checked; every field is already bounded by the upload parser's field limit."""
    try:
        name = check_name(fields["name"]) if fields.get("name") else None
        tags = parse_tags(fields.get("tags", ""))
    except BadLabel as exc:
        raise ApiError(422, "invalid_upload", str(exc)) from None
    preprocess = None
    if fields.get("preprocess"):
        try:
            preprocess = Preprocess.model_validate(json.loads(fields["preprocess"])).model_dump(mode="json")
        except ValueError as exc:
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'preprocess'}: {e['msg']}" for e in exc.errors()[:3]
            ) if isinstance(exc, ValidationError) else "not JSON"
            raise ApiError(422, "invalid_upload", f"'preprocess': {detail}") from None
    label_space = fields.get("label_space") or None
    if label_space is not None and not re.match(LABEL_SPACE, label_space):
        raise ApiError(422, "invalid_upload", "'label_space' is 1 to 64 of A-Z a-z 0-9 _ . : -")
    return Described(name, tags, preprocess, label_space)
