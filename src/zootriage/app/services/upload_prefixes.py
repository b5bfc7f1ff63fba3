"""A job's uploaded checkpoint named by a unique prefix of its id, as every other id may be.

A checkpoint reference's ``path`` is an upload's id (its sha256, 64 hex digits), optionally with a
format suffix (``.pt2``, ``.safetensors``, ``.pt``...). A ``path`` of at least ``MIN_PREFIX`` but
fewer than 64 lower-case hex digits, with or without a suffix, is a short id: it is resolved here by
``app.services.short_ids`` (the one resolver) to the full id, the suffix kept, before the job is
admitted. So the stored request, its request key and its run hold the full id, and a job naming an
upload by a prefix is the same job as one naming it in full. No upload under the prefix is 404
``unknown_checkpoint`` (the code of a full id that names none), several are 409 ``ambiguous_id``.
Anything else is left as it is for admission to judge.
"""

from __future__ import annotations

import re

from sqlalchemy.orm import Session

from zootriage.app.references import UnknownCheckpoint
from zootriage.app.schemas.jobs import JobRequest
from zootriage.app.services import short_ids
from zootriage.app.services.errors import ServiceError
from zootriage.core.zoo.refs import CheckpointRef

SHORT_PATH = re.compile(rf"^([0-9a-f]{{{short_ids.MIN_PREFIX},63}})(\.[a-z0-9]+)?$")


def full_upload_path(session: Session, path: str) -> str:
    """``path`` with a short upload id replaced by the full id it names (its suffix kept); any other
    path unchanged."""
    short = SHORT_PATH.match(path)
    if short is None:
        return path
    prefix, suffix = short.group(1), short.group(2) or ""
    try:
        found = str(short_ids.resolve(session, short_ids.UPLOAD, prefix))
    except ServiceError as exc:
        if exc.status == 404:
            raise UnknownCheckpoint(
                f"no uploaded checkpoint has an id beginning with {prefix} (see /v1/checkpoints)"
            ) from None
        raise
    return found + suffix


def with_full_upload_id(session: Session, body: JobRequest) -> JobRequest:
    """The request with its checkpoint's short id, if it has one, made the full id."""
    ref = body.model
    if not isinstance(ref, CheckpointRef):
        return body
    path = full_upload_path(session, ref.path)
    if path == ref.path:
        return body
    return body.model_copy(update={"model": ref.model_copy(update={"path": path})})
