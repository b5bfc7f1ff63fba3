"""The jobs repository: what the home page lists."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import ACTIVE_STATUSES, Job


def active_and_recent(session: Session, recent: int) -> tuple[list[Job], list[Job]]:
    """Every queued or running job, and the ``recent`` newest finished ones; newest first."""
    active = [s.value for s in ACTIVE_STATUSES]
    newest = Job.created_at.desc()
    running = session.scalars(select(Job).where(Job.status.in_(active)).order_by(newest)).all()
    finished = session.scalars(
        select(Job).where(Job.status.not_in(active)).order_by(newest).limit(recent)
    ).all()
    return list(running), list(finished)
