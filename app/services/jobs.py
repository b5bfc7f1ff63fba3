"""Submitting and cancelling jobs: where a request becomes a run key, a finished run or one queued job.

The order matters. The job row is flushed (taking the partial unique index on active run keys) before
the task is published, and committed only after: if the broker is down the transaction rolls back and
nothing is left half-written; if an identical request races us, the index makes it wait for our commit
and then find our job, so N identical posts queue one computation.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.api.errors import ApiError
from app.db.models import ACTIVE_STATUSES, Job, JobStatus, Run
from app.db.run_key import canonical_json, run_key
from app.queue import enqueue_score, revoke
from app.schemas.jobs import JobRequest
from app.services.identity import identify
from app.settings import Settings
from core.markers import Protocol


@dataclass(frozen=True)
class Submitted:
    """Either the run that already answers the request, or the job that will."""

    run: Run | None = None
    job: Job | None = None


def _protocol(body: JobRequest) -> dict[str, Any]:
    try:
        return Protocol.from_dict(dict(body.protocol)).to_dict()
    except (ValueError, TypeError) as exc:
        raise ApiError(422, "invalid_protocol", str(exc)) from exc


def _active_job(session: Session, key: str) -> Job | None:
    active = [s.value for s in ACTIVE_STATUSES]
    return session.scalar(select(Job).where(Job.run_key == key, Job.status.in_(active)))


def _replay(session: Session, idempotency_key: str, request_hash: str) -> Submitted | None:
    job = session.scalar(select(Job).where(Job.idempotency_key == idempotency_key))
    if job is None:
        return None
    if job.request_hash != request_hash:
        raise ApiError(409, "idempotency_key_reused", "this Idempotency-Key was used with another request")
    return Submitted(job=job)


def submit(session: Session, settings: Settings, body: JobRequest, idempotency_key: str | None) -> Submitted:
    request = body.model_dump(mode="json")
    request_hash = hashlib.sha256(canonical_json(request).encode()).hexdigest()
    if idempotency_key is not None and (replayed := _replay(session, idempotency_key, request_hash)):
        return replayed
    protocol = _protocol(body)
    identity = identify(body, settings)
    key = run_key(identity.weights_sha256, identity.dataset_fingerprint, identity.sampling, protocol)
    if (run := session.scalar(select(Run).where(Run.run_key == key))) is not None:
        return Submitted(run=run)
    if (job := _active_job(session, key)) is not None:
        return Submitted(job=job)
    job = Job(
        run_key=key,
        request={**request, "protocol": protocol, "sampling": identity.sampling},
        request_hash=request_hash,
        idempotency_key=idempotency_key,
        status=JobStatus.queued.value,
    )
    session.add(job)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        return _after_race(session, key, idempotency_key, request_hash)
    try:
        enqueue_score(settings, str(job.id))
    except Exception:
        session.rollback()
        raise
    session.commit()
    return Submitted(job=job)


def _after_race(session: Session, key: str, idempotency_key: str | None, request_hash: str) -> Submitted:
    """Another request committed the same job (or idempotency key) first: answer with theirs."""
    if idempotency_key is not None and (replayed := _replay(session, idempotency_key, request_hash)):
        return replayed
    if (job := _active_job(session, key)) is not None:
        return Submitted(job=job)
    if (run := session.scalar(select(Run).where(Run.run_key == key))) is not None:
        return Submitted(run=run)
    raise ApiError(409, "conflict", "a concurrent identical request is being handled; retry")


def cancel(session: Session, settings: Settings, job: Job) -> Job:
    """Mark a queued or running job cancelled; the worker checks the row and stops at its next step."""
    active = [s.value for s in ACTIVE_STATUSES]
    done = session.execute(
        update(Job)
        .where(Job.id == job.id, Job.status.in_(active))
        .values(status=JobStatus.cancelled.value, finished_at=datetime.now(UTC))
    )
    session.commit()
    if done.rowcount == 0:  # type: ignore[attr-defined]
        session.refresh(job)
        raise ApiError(409, "job_finished", f"job {job.id} is already {job.status}")
    session.refresh(job)
    revoke(settings, str(job.id))
    return job
