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
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from zootriage.app.db import job_queries
from zootriage.app.db.job_queries import (
    active_job,
    extraction_of,
    job_by_id,
    job_by_idempotency_key,
    mark_cancelled,
    newest_run_of_request,
)
from zootriage.app.db.models import Job, JobStatus, Run
from zootriage.app.db.run_key import canonical_json, extraction_key
from zootriage.app.queue import enqueue_score, revoke
from zootriage.app.schemas.jobs import JobRequest
from zootriage.app.services.admission import Admitted, admit
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.inherit import inherit
from zootriage.app.settings import Settings


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


def submit(session: Session, settings: Settings, body: JobRequest, idempotency_key: str | None) -> Submitted:
    # The body's models fill in every default, so spelling a default out is the same request.
    request_hash = hashlib.sha256(canonical_json(body.model_dump(mode="json")).encode()).hexdigest()
    if idempotency_key is not None and (replayed := _replay(session, idempotency_key, request_hash)):
        return replayed
    inherited = inherit(session, body)
    admitted = admit(inherited.body, settings)
    key = admitted.request_key
    if (run := stored_run(session, admitted)) is not None:
        return Submitted(run=run)
    if (job := active_job(session, key)) is not None:
        return Submitted(job=job)
    extraction = extraction_key(admitted.request)
    job = Job(
        request_key=key,
        request=admitted.request,
        request_hash=request_hash,
        idempotency_key=idempotency_key,
        status=JobStatus.queued.value,
        name=inherited.name,
        tags=inherited.tags,
        extraction_key=extraction,
        features=_reused_extraction(session, extraction),
    )
    session.add(job)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        return _after_race(session, admitted, idempotency_key, request_hash)
    try:
        enqueue_score(settings, str(job.id), (job.features or {}).get("cache_key"))
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


def active_and_recent(session: Session, recent: int) -> tuple[list[Job], list[Job]]:
    """The live jobs table: every queued or running job, and the ``recent`` newest finished ones."""
    return job_queries.active_and_recent(session, recent)


def find_job(session: Session, job_id: uuid.UUID) -> Job:
    """The job's row; 404 ``job_not_found``."""
    job = job_by_id(session, job_id)
    if job is None:
        raise ServiceError(404, "job_not_found", f"no job {job_id}")
    return job


def cancel(session: Session, settings: Settings, job: Job) -> Job:
    """Mark a queued or running job cancelled; the worker checks the row and stops at its next step."""
    cancelled = mark_cancelled(session, job.id)
    session.commit()
    if not cancelled:
        session.refresh(job)
        raise ServiceError(409, "job_finished", f"job {job.id} is already {job.status}")
    session.refresh(job)
    revoke(settings, str(job.id))
    return job
