"""Path ids as the routes take them: the full id or a unique prefix of it, resolved once by
``app.services.short_ids`` (422 malformed or too short, 404 no such id, 409 ``ambiguous_id``)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends, Path

from zootriage.app.api.deps import SessionDep
from zootriage.app.services import short_ids

IdText = Annotated[
    str,
    Path(
        max_length=short_ids.ID_TEXT_MAX,
        description=f"the id, or its first {short_ids.MIN_PREFIX} or more hex digits when they name one",
    ),
]


def _run(run_id: IdText, session: SessionDep) -> uuid.UUID:
    return short_ids.resolve_uuid(session, short_ids.RUN, run_id)


def _job(job_id: IdText, session: SessionDep) -> uuid.UUID:
    return short_ids.resolve_uuid(session, short_ids.JOB, job_id)


def _gate(gate_id: IdText, session: SessionDep) -> uuid.UUID:
    return short_ids.resolve_uuid(session, short_ids.GATE, gate_id)


def _sweep(sweep_id: IdText, session: SessionDep) -> uuid.UUID:
    return short_ids.resolve_uuid(session, short_ids.SWEEP, sweep_id)


def _upload(upload_id: IdText, session: SessionDep) -> str:
    return str(short_ids.resolve(session, short_ids.UPLOAD, upload_id))


RunId = Annotated[uuid.UUID, Depends(_run)]
JobId = Annotated[uuid.UUID, Depends(_job)]
GateId = Annotated[uuid.UUID, Depends(_gate)]
SweepId = Annotated[uuid.UUID, Depends(_sweep)]
UploadId = Annotated[str, Depends(_upload)]
