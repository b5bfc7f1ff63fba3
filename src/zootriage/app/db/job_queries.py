"""The jobs repository: a job by id, by active request key or by idempotency key, the newest run of a
request key, what the home page lists, and the list of every job by keyset (``app.db.paging``),
newest first. (A job's state changes in ``app.db.job_lifecycle``.)"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from zootriage.app.db.models import ACTIVE_STATUSES, Job, JobStatus, Run
from zootriage.app.db.paging import PageKey, rows_after, split_page

_ACTIVE = [s.value for s in ACTIVE_STATUSES]


def job_by_id(session: Session, job_id: uuid.UUID) -> Job | None:
    return session.get(Job, job_id)


def active_job(session: Session, request_key: str) -> Job | None:
    """The queued or running job of a request key (at most one: a partial unique index)."""
    return session.scalar(select(Job).where(Job.request_key == request_key, Job.status.in_(_ACTIVE)))


def extraction_of(session: Session, extraction_key: str) -> dict[str, Any] | None:
    """The newest extraction record (``Job.features``) of a job with this extraction key, or None."""
    newest = (
        select(Job.features)
        .where(Job.extraction_key == extraction_key, Job.features.is_not(None))
        .order_by(Job.created_at.desc())
        .limit(1)
    )
    return session.scalar(newest)


def job_by_idempotency_key(session: Session, idempotency_key: str) -> Job | None:
    return session.scalar(select(Job).where(Job.idempotency_key == idempotency_key))


def newest_run_of_request(session: Session, request_key: str) -> Run | None:
    """The newest run stored under a request key, or None."""
    newest = select(Run).where(Run.request_key == request_key).order_by(Run.created_at.desc())
    return session.scalar(newest.limit(1))


def active_and_recent(
    session: Session, recent: int, projects: Collection[int] | None = None
) -> tuple[list[Job], list[Job]]:
    """Every queued or running job, and the ``recent`` newest finished ones (of these projects, when
    given); newest first."""
    newest = Job.created_at.desc()
    jobs = select(Job) if projects is None else select(Job).where(Job.project_id.in_(list(projects)))
    running = session.scalars(jobs.where(Job.status.in_(_ACTIVE)).order_by(newest)).all()
    finished = session.scalars(jobs.where(Job.status.not_in(_ACTIVE)).order_by(newest).limit(recent)).all()
    return list(running), list(finished)


def list_jobs(
    session: Session,
    *,
    limit: int,
    after: PageKey | None = None,
    status: JobStatus | None = None,
    projects: Collection[int] | None = None,
) -> tuple[list[Job], PageKey | None]:
    """One page of jobs (of one status, and of these projects, when given), newest first, and the key
    to continue from (None on the last page)."""
    query = select(Job)
    if projects is not None:
        query = query.where(Job.project_id.in_(list(projects)))
    if status is not None:
        query = query.where(Job.status == status.value)
    if after is not None:
        query = query.where(rows_after(Job.created_at, Job.id, after, descending=True))
    rows = session.scalars(query.order_by(Job.created_at.desc(), Job.id.desc()).limit(limit + 1)).all()
    page, end = split_page(rows, limit)
    return page, (PageKey(end.created_at, end.id) if end is not None else None)
