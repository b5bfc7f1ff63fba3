"""Queries behind the triage answers: stored torchvision v1/v2 runs, and the gate history.

The gate history pages by keyset on (created_at, id), newest first, like the run history.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from app.db.models import Gate, Run
from app.db.run_queries import PageKey


def torchvision_runs(session: Session, architectures: Collection[str], dataset_fingerprint: str) -> list[Run]:
    """Runs of the given torchvision architectures on one dataset sample, newest first.

    Sampling, protocol and weights are in JSON columns and compared by the caller: this narrows by the
    indexed columns, which leaves a handful of rows per architecture.
    """
    if not architectures:
        return []
    query = (
        select(Run)
        .where(Run.architecture.in_(list(architectures)), Run.dataset_fingerprint == dataset_fingerprint)
        .order_by(Run.created_at.desc(), Run.id.desc())
    )
    return [run for run in session.scalars(query) if run.model_ref.get("source") == "torchvision"]


def list_gates(
    session: Session, *, limit: int, after: PageKey | None = None, passed: bool | None = None
) -> tuple[list[Gate], PageKey | None]:
    """One page of gate decisions, newest first, and the key to continue from (None on the last page)."""
    query = select(Gate)
    if passed is not None:
        query = query.where(Gate.passed == passed)
    if after is not None:
        query = query.where(
            or_(Gate.created_at < after.value, and_(Gate.created_at == after.value, Gate.id < after.run_id))
        )
    rows = list(session.scalars(query.order_by(Gate.created_at.desc(), Gate.id.desc()).limit(limit + 1)))
    page = rows[:limit]
    if len(rows) <= limit:
        return page, None
    return page, PageKey(page[-1].created_at, page[-1].id)
