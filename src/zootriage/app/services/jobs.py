"""Submitting and cancelling jobs: where a request becomes a request key, a finished run or one queued job.

The API knows a request by its request key (``app.db.run_key.request_key``: the normalised request,
computed without opening anything); the worker computes the content identity and the run key. A
request on immutable data (builtin, archive, upload) whose key already has a run gets that run; any
other request with no active job under its key is queued, and the worker links it to the run its
content names if one exists (see ``worker.runner``).

The order matters. The job row is flushed (taking the partial unique index on active request keys)
before the task is published, and committed only after: if the broker is down the transaction rolls
back and nothing is left half-written; if an identical request races us, the index makes it wait for
our commit and then find our job, so N identical posts queue one computation.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from zootriage.app.db import job_lifecycle, job_queries, project_queries
from zootriage.app.db.job_queries import (
    active_job,
    extraction_of,
    job_by_id,
    job_by_idempotency_key,
    list_jobs,
    newest_run_of_request,
)
from zootriage.app.db.models import Job, JobStatus, Run
from zootriage.app.db.paging import PageKey
from zootriage.app.db.run_key import canonical_json, extraction_key
from zootriage.app.project_names import DEFAULT_PROJECT
from zootriage.app.queue import enqueue_score, revoke
from zootriage.app.schemas.jobs import JobOut, JobRequest
from zootriage.app.services.admission import Admitted, admit
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.inherit import inherit
from zootriage.app.services.sweep_queue import mark_published, publish_after, send
from zootriage.app.services.upload_prefixes import with_full_upload_id
from zootriage.app.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Submitted:
    """Either the run that already answers the request, or the job that will."""

    run: Run | None = None
    job: Job | None = None


def stored_run(session: Session, admitted: Admitted) -> Run | None:
    """The newest run stored for this request, when a stored run may answer it (immutable data)."""
    if not admitted.reusable:
        return None
    return newest_run_of_request(session, admitted.request_key)


def _replay(session: Session, idempotency_key: str, request_hash: str) -> Submitted | None:
    job = job_by_idempotency_key(session, idempotency_key)
    if job is None:
        return None
    if job.request_hash != request_hash:
        raise ServiceError(
            409, "idempotency_key_reused", "this Idempotency-Key was used with another request"
        )
    return Submitted(job=job)


@dataclass(frozen=True)
class Prepared:
    """A request that passed admission, with what its job row will carry."""

    admitted: Admitted
    request_hash: str
    name: str | None
    tags: dict[str, str]


def request_hash_of(body: JobRequest) -> str:
    # The body's models fill in every default, so spelling a default out is the same request.
    return hashlib.sha256(canonical_json(body.model_dump(mode="json")).encode()).hexdigest()


def prepare(session: Session, settings: Settings, body: JobRequest) -> Prepared:
    """Admit a request (``app.services.admission``; a 4xx ``ZooError`` refuses it) without writing; an
    upload named by a unique prefix of its id is named in full first (``app.services.upload_prefixes``)."""
    inherited = inherit(session, with_full_upload_id(session, body))
    admitted = admit(inherited.body, settings)
    return Prepared(admitted, request_hash_of(body), inherited.name, dict(inherited.tags))


def submit(
    session: Session,
    settings: Settings,
    body: JobRequest,
    idempotency_key: str | None,
    project_id: int | None = None,
) -> Submitted:
    """``create`` for a request, in project ``project_id`` (None: the default project); a repeated
    Idempotency-Key replays its first answer."""
    if idempotency_key is not None and (replayed := _replay(session, idempotency_key, request_hash_of(body))):
        return replayed
    return create(session, settings, prepare(session, settings, body), idempotency_key, project_id=project_id)


def _in_project(session: Session, project_id: int | None, submitted: Submitted) -> Submitted:
    """The answer's run joins the project now, or its job's run when the job finishes (a job of another
    project joined: ``app.db.project_queries.join_job``); committed."""
    if project_id is None:
        project_id = project_queries.project_named(session, DEFAULT_PROJECT).id
    if submitted.run is not None:
        project_queries.join_runs(session, project_id, [submitted.run.id])
    elif submitted.job is not None:
        project_queries.join_job(session, project_id, submitted.job)
    session.commit()
    return submitted


def create(
    session: Session,
    settings: Settings,
    prepared: Prepared,
    idempotency_key: str | None = None,
    sweep_id: uuid.UUID | None = None,
    project_id: int | None = None,
) -> Submitted:
    """The stored run, the active job of the same request, or a new job, in project ``project_id``
    (None: the default project), which the run joins. A new job of a sweep is held (``published_at``
    None: ``app.services.sweep_queue`` publishes it when the sweep has room); any other new job is
    published at once."""
    admitted = prepared.admitted
    key = admitted.request_key
    if (run := stored_run(session, admitted)) is not None:
        return _in_project(session, project_id, Submitted(run=run))
    if (job := active_job(session, key)) is not None:
        if sweep_id is None and job.published_at is None and job.sweep_id is not None:
            _publish_held(session, settings, job)
        return _in_project(session, project_id, Submitted(job=job))
    if project_id is None:
        project_id = project_queries.project_named(session, DEFAULT_PROJECT).id
    extraction = extraction_key(admitted.request)
    job = Job(
        request_key=key,
        request=admitted.request,
        request_hash=prepared.request_hash,
        idempotency_key=idempotency_key,
        name=prepared.name,
        tags=prepared.tags,
        extraction_key=extraction,
        features=_reused_extraction(session, extraction),
        sweep_id=sweep_id,
        project_id=project_id,
        **job_lifecycle.new_job_values(),
    )
    session.add(job)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raced = _after_race(session, admitted, idempotency_key, prepared.request_hash)
        return _in_project(session, project_id, raced)
    if sweep_id is None:
        try:
            for job_id, publication, features in mark_published(session, [job.id]):
                enqueue_score(settings, str(job_id), publication, features)  # a broker away raises
        except Exception:
            session.rollback()
            raise
    session.commit()
    return Submitted(job=job)


def _reused_extraction(session: Session, extraction: str | None) -> dict[str, Any] | None:
    """The extraction record of an earlier job on the same model, data and sample (another protocol,
    say), so this one starts at the marker stage: its features come from the cache (no stage time of
    its own yet), extracted by the worker the record names."""
    found = extraction_of(session, extraction) if extraction is not None else None
    return None if found is None else {**found, "features_cached": True, "timings": {}}


def _publish_held(session: Session, settings: Settings, job: Job) -> None:
    """Someone asked for a job a sweep still holds back: it is theirs too now, so it is published at
    once rather than when the sweep gets to it (its sweep then has one more in flight for a while)."""
    marked = mark_published(session, [job.id])  # none when its sweep published it meanwhile
    session.commit()
    send(settings, marked)


def _after_race(
    session: Session, admitted: Admitted, idempotency_key: str | None, request_hash: str
) -> Submitted:
    """Another request committed the same job (or idempotency key) first: answer with theirs."""
    if idempotency_key is not None and (replayed := _replay(session, idempotency_key, request_hash)):
        return replayed
    if (job := active_job(session, admitted.request_key)) is not None:
        return Submitted(job=job)
    if (run := stored_run(session, admitted)) is not None:
        return Submitted(run=run)
    raise ServiceError(409, "conflict", "a concurrent identical request is being handled; retry")


def active_and_recent(
    session: Session, recent: int, projects: tuple[int, ...] | None = None
) -> tuple[list[Job], list[Job]]:
    """The live jobs table: every queued or running job, and the ``recent`` newest finished ones, of
    these projects (None: every project)."""
    return job_queries.active_and_recent(session, recent, projects)


def job_page(
    session: Session,
    limit: int,
    after: PageKey | None,
    status: JobStatus | None = None,
    projects: tuple[int, ...] | None = None,
) -> tuple[list[JobOut], PageKey | None]:
    """One page of jobs (of one status, and of these projects, when given; None: every project), newest
    first, and where the next begins."""
    rows, next_key = list_jobs(session, limit=limit, after=after, status=status, projects=projects)
    return [JobOut.model_validate(row) for row in rows], next_key


def find_job(session: Session, job_id: uuid.UUID) -> Job:
    """The job's row; 404 ``job_not_found``."""
    job = job_by_id(session, job_id)
    if job is None:
        raise ServiceError(404, "job_not_found", f"no job {job_id}")
    return job


def cancel(session: Session, settings: Settings, job: Job) -> Job:
    """Mark a queued or running job cancelled; the worker checks the row and stops at its next step."""
    cancelled = job_lifecycle.cancel(session, job.id).moved
    session.commit()
    if not cancelled:
        session.refresh(job)
        raise ServiceError(409, "job_finished", f"job {job.id} is already {job.status}")
    session.refresh(job)
    revoke(settings, str(job.id))
    publish_after(settings, job.id)
    return job
