"""Scoring jobs: submit (idempotent by request key and by Idempotency-Key), list, poll, cancel; a job is
named by its id or a unique prefix of it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse

from zootriage.app.api.cursor import Cursor, PageLimit, decode_cursor, encode_cursor
from zootriage.app.api.deps import SessionDep, SettingsDep, WriteAccess
from zootriage.app.api.errors import responses
from zootriage.app.api.project_scope import ListedProjects, VisibleJobId, WorkProject
from zootriage.app.db.models import JobStatus
from zootriage.app.db.paging import CREATED
from zootriage.app.schemas.jobs import JobOut, JobPage, JobRequest
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
    project: WorkProject,
    idempotency_key: Annotated[
        str | None, Header(min_length=1, max_length=255, pattern=r"\S", description="replays the first reply")
    ] = None,
) -> JSONResponse:
    """Queue a scoring job (202 + ``Location``), or return the run already computed for it (200), in
    ``?project=`` (default: the default project), which the run joins."""
    submitted = job_service.submit(session, settings, body, idempotency_key, project.id)
    if submitted.run is not None:
        detail = run_service.run_detail(session, submitted.run.id)
        return JSONResponse(detail.model_dump(mode="json"), status_code=200)
    assert submitted.job is not None
    body_out = JobOut.model_validate(submitted.job).model_dump(mode="json")
    return JSONResponse(body_out, status_code=202, headers={"Location": f"/v1/jobs/{submitted.job.id}"})


@router.get("", response_model=JobPage, responses=responses(422))
def get_jobs(
    session: SessionDep,
    settings: SettingsDep,
    projects: ListedProjects,
    status: JobStatus | None = None,
    limit: PageLimit = 50,
    cursor: Cursor = None,
) -> JobPage:
    """Jobs, newest first, of one ``status`` when given (queued, running, succeeded, failed, cancelled),
    in ``?project=`` or else every project the key may use."""
    after = decode_cursor(cursor, CREATED, True) if cursor else None
    size = min(limit, settings.page_size_max)
    items, next_key = job_service.job_page(session, size, after, status, projects)
    return JobPage(items=items, next_cursor=encode_cursor(next_key, CREATED, True) if next_key else None)


@router.get("/{job_id}", response_model=JobOut, responses=responses(404, 409, 422))
def get_job(job_id: VisibleJobId, session: SessionDep) -> JobOut:
    return JobOut.model_validate(job_service.find_job(session, job_id))


@router.delete("/{job_id}", response_model=JobOut, responses=responses(401, 404, 409, 422))
def cancel_job(_: WriteAccess, job_id: VisibleJobId, session: SessionDep, settings: SettingsDep) -> JobOut:
    """Cancel a queued or running job; 409 when it has already finished."""
    return JobOut.model_validate(job_service.cancel(session, settings, job_service.find_job(session, job_id)))
