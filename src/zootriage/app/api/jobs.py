"""Scoring jobs: submit (idempotent by request key and by Idempotency-Key), poll, cancel."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse

from zootriage.app.api.deps import SessionDep, SettingsDep, WriteAccess
from zootriage.app.api.errors import responses
from zootriage.app.schemas.jobs import JobOut, JobRequest
from zootriage.app.schemas.runs import RunDetail
from zootriage.app.services import jobs as job_service
from zootriage.app.services import runs as run_service

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


@router.post(
    "",
    status_code=202,
    response_model=JobOut,
    responses={
        200: {"model": RunDetail, "description": "already computed: the existing run"},
        **responses(401, 403, 404, 409, 413, 422, 503),
    },
)
def submit_job(
    body: JobRequest,
    session: SessionDep,
    settings: SettingsDep,
    _: WriteAccess,
    idempotency_key: Annotated[
        str | None, Header(min_length=1, max_length=255, pattern=r"\S", description="replays the first reply")
    ] = None,
) -> JSONResponse:
    """Queue a scoring job (202 + ``Location``), or return the run already computed for it (200)."""
    submitted = job_service.submit(session, settings, body, idempotency_key)
    if submitted.run is not None:
        detail = run_service.run_detail(session, submitted.run.id)
        return JSONResponse(detail.model_dump(mode="json"), status_code=200)
    assert submitted.job is not None
    body_out = JobOut.model_validate(submitted.job).model_dump(mode="json")
    return JSONResponse(body_out, status_code=202, headers={"Location": f"/v1/jobs/{submitted.job.id}"})


@router.get("/{job_id}", response_model=JobOut, responses=responses(404, 422))
def get_job(job_id: uuid.UUID, session: SessionDep) -> JobOut:
    return JobOut.model_validate(job_service.find_job(session, job_id))


@router.delete("/{job_id}", response_model=JobOut, responses=responses(401, 404, 409, 422))
def cancel_job(job_id: uuid.UUID, session: SessionDep, settings: SettingsDep, _: WriteAccess) -> JobOut:
    """Cancel a queued or running job; 409 when it has already finished."""
    return JobOut.model_validate(job_service.cancel(session, settings, job_service.find_job(session, job_id)))
