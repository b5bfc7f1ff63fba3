"""Uploaded checkpoints: accepted after the static check only (``core.zoo.archive_check``).

The API process never opens an upload with a torch loader and never builds a model: whether a
state_dict fits its architecture, or a program runs, is learnt when a job loads it in the worker's
isolated child (``core.isolation``). An accepted file goes into the shared store under its content
address ``uploads/<sha256><suffix>`` (``app.references.upload_key``), where a worker on any host
fetches it; the API host's upload folder only holds the file while it arrives.
"""

from __future__ import annotations

import errno
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import ValidationError
from sqlalchemy.orm import Session

from zootriage.app.db.checkpoint_queries import list_checkpoints, save_checkpoint, stored_checkpoint
from zootriage.app.db.models import Checkpoint
from zootriage.app.db.paging import PageKey
from zootriage.app.labels import BadLabel, check_name, parse_tags
from zootriage.app.references import CANONICAL_SUFFIX, FORMATS, upload_key
from zootriage.app.schemas.checkpoints import CheckpointOut
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.uploads import ReceivedFile, receive_file
from zootriage.app.settings import Settings
from zootriage.app.storage import upload_store
from zootriage.core.catalogue import timm as timm_catalogue
from zootriage.core.catalogue import torchvision as torchvision_catalogue
from zootriage.core.plain_text import controls
from zootriage.core.storage import Store
from zootriage.core.zoo.archive_check import check_file, program_extra
from zootriage.core.zoo.preprocess import Preprocess
from zootriage.core.zoo.program_metadata import LABEL_SPACE, METADATA_FILE, ProgramMetadata, parse_metadata

LIBRARIES = ("torchvision", "timm")


def suffix_of(filename: str | None) -> str:
    suffix = Path(filename or "").suffix.lower()
    if suffix not in FORMATS:
        raise ServiceError(
            422, "unsupported_format", f"checkpoint file names end in one of {sorted(FORMATS)}"
        )
    return suffix


def check_text(received: ReceivedFile) -> None:
    """The file name and every form field hold no control character (a field may break lines and
    tab): no NUL, which PostgreSQL cannot store, and nothing a terminal showing the name would obey.
    Checked before anything is stored, so a refused upload leaves nothing behind."""
    texts = {"the file name": (received.filename or "", "")}
    texts.update({f"{name!r}": (value, "\t\n\r") for name, value in received.fields.items()})
    for name, (text, allowed) in texts.items():
        if controls(text, allowed):
            raise ServiceError(422, "invalid_upload", f"{name} holds a NUL or another control character")


def check_fields(library: str | None, architecture: str | None, suffix: str) -> None:
    """A state_dict names its library architecture; a program may describe itself with a free
    ``architecture`` (no library), which its own ``zootriage.json`` overrides."""
    if (library is None) != (architecture is None) and suffix != ".pt2":
        raise ServiceError(422, "invalid_upload", "'library' and 'architecture' go together")
    if architecture is not None and len(architecture) > 128:
        raise ServiceError(422, "invalid_upload", "'architecture' has at most 128 characters")
    if library is not None and library not in LIBRARIES:
        raise ServiceError(422, "invalid_upload", f"'library' is one of {LIBRARIES}")
    if library is not None and suffix == ".pt2":
        raise ServiceError(422, "invalid_upload", "a .pt2 program carries its own architecture")
    if library is not None and architecture is not None and not _known(library, architecture):
        raise ServiceError(422, "unknown_model", f"{library} has no architecture {architecture!r}")


def _known(library: str, architecture: str) -> bool:
    """Whether the library lists the name (its published catalogue, ``core.catalogue``: a torchvision
    classifier, a timm model); nothing is built or imported."""
    if library == "torchvision":
        return torchvision_catalogue.is_classifier(architecture)
    return timm_catalogue.is_model(architecture.partition(".")[0])


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
        raise ServiceError(422, "invalid_upload", str(exc)) from None
    preprocess = None
    if fields.get("preprocess"):
        try:
            preprocess = Preprocess.model_validate(json.loads(fields["preprocess"])).model_dump(mode="json")
        except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'preprocess'}: {e['msg']}" for e in exc.errors()[:3]
            ) if isinstance(exc, ValidationError) else "not JSON"
            raise ServiceError(422, "invalid_upload", f"'preprocess': {detail}") from None
    label_space = fields.get("label_space") or None
    if label_space is not None and not re.match(LABEL_SPACE, label_space):
        raise ServiceError(422, "invalid_upload", "'label_space' is 1 to 64 of A-Z a-z 0-9 _ . : -")
    return Described(name, tags, preprocess, label_space)


# What a job on the checkpoint inherits when it says nothing itself (``app.services.inherit``): these
# change the numbers of later jobs, so the first upload's stay and a re-upload may not say otherwise.
# Every other field (file name, name, tags, a state_dict's library and architecture, which its jobs
# name themselves) only describes the bytes: a re-upload that gives others is the same checkpoint.
INHERITED = ("preprocess", "label_space")


@dataclass(frozen=True)
class Accepted:
    """The stored record, and whether this upload created it (201) or found it already stored (200)."""

    checkpoint: CheckpointOut
    created: bool


def _again(existing: Checkpoint, upload: Checkpoint) -> Accepted:
    """The stored record for the same bytes uploaded again: 200 whatever name, tags or file name the
    re-upload gives (labels belong to jobs and runs, which take them from the job); 409 only when it
    gives a preprocessing or label space other than the stored one, which jobs on it inherit."""
    clashes = [
        f for f in INHERITED if getattr(upload, f) is not None and getattr(upload, f) != getattr(existing, f)
    ]
    if not clashes:
        return Accepted(CheckpointOut.model_validate(existing), created=False)
    stored = ", ".join(f"{f}={getattr(existing, f)!r}" for f in clashes)
    raise ServiceError(
        409, "checkpoint_exists",
        f"these bytes are already checkpoint {existing.sha256} with {stored}, which jobs on it that give "
        f"none inherit; give {' and '.join(clashes)} on the job's model instead (model.{clashes[0]})",
    )


def accept(session: Session, store: Store, received: ReceivedFile) -> Accepted:
    """Check a received upload (form fields, then the static check of the file), put it into ``store``
    under its content address and record it; the same bytes again answer with the stored record.
    Blocking: the router runs it in a worker thread. The received temporary file is the caller's to
    remove (a local store on the same disk takes it by a rename)."""
    check_text(received)
    suffix = suffix_of(received.filename)
    library = received.fields.get("library") or None
    architecture = received.fields.get("architecture") or None
    check_fields(library, architecture, suffix)
    given = described(received.fields)
    saved = validate(received, suffix)
    row = Checkpoint(
        sha256=received.sha256,
        size_bytes=received.size,
        format=FORMATS[suffix],
        library=library,
        architecture=saved.architecture or architecture,
        filename=display_name(received, suffix),
        name=given.name or saved.name,
        tags=given.tags,
        preprocess=given.preprocess,
        label_space=given.label_space,
    )
    existing = stored_checkpoint(session, received.sha256)
    if existing is not None:
        return _again(existing, row)
    # The object before the row: a row always names bytes a worker can fetch. Two racing uploads of
    # the same bytes put the same object (idempotent by content) and one row wins below.
    key = upload_key(received.sha256, CANONICAL_SUFFIX[FORMATS[suffix]])
    try:
        store.put_file(key, received.path, consume=True)
    except Exception as exc:  # a full disk, an object store away: the server's state, not the client's
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ServiceError(507, "insufficient_storage", "no space left for uploads") from exc
        raise ServiceError(503, "storage_unavailable", "the upload store did not take the file") from exc
    winner = save_checkpoint(session, row)
    if winner is not None:
        return _again(winner, row)
    return Accepted(CheckpointOut.model_validate(row), created=True)


async def upload(
    session: Session,
    settings: Settings,
    content_type: str | None,
    declared_length: str | None,
    chunks: AsyncIterator[bytes],
) -> Accepted:
    """An upload as it arrives (the request's Content-Type and Content-Length, its body's chunks), for
    ``POST /v1/checkpoints`` and the upload form alike: 413 when it declares more than the limit, then
    received (streamed, hashed, bounded: ``receive_file``) and ``accept``-ed in a worker thread; the
    temporary file is removed either way."""
    limit = settings.upload_limit_bytes
    # The multipart framing around the file is allowed 64 KiB on top of the file's own limit.
    if declared_length and declared_length.isdigit() and int(declared_length) > limit + 64 * 1024:
        raise ServiceError(413, "payload_too_large", f"checkpoints are limited to {limit} bytes")
    received = await receive_file(content_type, chunks, settings.effective_upload_dir, limit)
    try:
        return await anyio.to_thread.run_sync(accept, session, upload_store(settings), received)
    finally:
        received.path.unlink(missing_ok=True)


def find_checkpoint(session: Session, sha256: str) -> CheckpointOut:
    """One upload by its full id; 404 ``checkpoint_not_found``."""
    row = stored_checkpoint(session, sha256)
    if row is None:
        raise ServiceError(404, "checkpoint_not_found", f"no upload {sha256}")
    return CheckpointOut.model_validate(row)


def checkpoint_page(
    session: Session, limit: int, after: PageKey | None
) -> tuple[list[CheckpointOut], PageKey | None]:
    """One page of uploads, newest first, and where the next begins."""
    rows, next_key = list_checkpoints(session, limit=limit, after=after)
    return [CheckpointOut.model_validate(row) for row in rows], next_key
