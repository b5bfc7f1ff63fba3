"""The triage repository: stored runs by request key, gate decisions saved, found and listed.

The gate history pages by keyset on (created_at, id), newest first (``app.db.paging``), like the run
history.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from zootriage.app.db.models import Gate, Run
from zootriage.app.db.paging import PageKey, rows_after, split_page
from zootriage.app.db.project_queries import in_project_ids
from zootriage.app.db.run_queries import not_archived


def newest_runs_by_request(
    session: Session, request_keys: Collection[str], projects: Sequence[int] | None = None
) -> dict[str, Run]:
    """The newest stored run of each request key that is not archived and has joined one of
    ``projects`` (None: any project; keys with none are absent), by the indexed column: what the
    stored-run recommendations show, so an archived run, or one of a project the key may not use,
    drops out of them."""
    if not request_keys:
        return {}
    query = (
        select(Run)
        .where(Run.request_key.in_(list(request_keys)), not_archived())
        .order_by(Run.created_at.desc(), Run.id.desc())
    )
    if projects is not None:
        query = query.where(in_project_ids(projects))
    newest: dict[str, Run] = {}
    for run in session.scalars(query):
        newest.setdefault(str(run.request_key), run)
    return newest


def gate_by_id(session: Session, gate_id: uuid.UUID) -> Gate | None:
    return session.get(Gate, gate_id)


def save_gate(session: Session, row: Gate) -> Gate:
    """Record a gate decision (committed: a decision is kept for audit once it is answered)."""
    session.add(row)
    session.commit()
    return row


def list_gates(
    session: Session,
    *,
    limit: int,
    after: PageKey | None = None,
    passed: bool | None = None,
    project_ids: tuple[int, ...] | None = None,
) -> tuple[list[Gate], PageKey | None]:
    """One page of gate decisions, newest first (of the projects ``project_ids`` when given), and the
    key to continue from (None on the last page)."""
    query = select(Gate)
    if project_ids is not None:
        query = query.where(Gate.project_id.in_(project_ids))
    if passed is not None:
        query = query.where(Gate.passed == passed)
    if after is not None:
        query = query.where(rows_after(Gate.created_at, Gate.id, after, descending=True))
    rows = session.scalars(query.order_by(Gate.created_at.desc(), Gate.id.desc()).limit(limit + 1)).all()
    page, end = split_page(rows, limit)
    return page, (PageKey(end.created_at, end.id) if end is not None else None)
