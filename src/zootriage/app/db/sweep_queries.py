"""The sweeps repository: a sweep by id, its members with their jobs, its own active jobs, the list.

The list pages by keyset on (created_at, id), newest first (``app.db.paging``), like the gates.

A sweep is in exactly one project, the one it was created in (``Sweep.project_id``). Its members'
jobs and runs may be in other projects too (a model answered by another project's stored run or active
job, which the sweep joined), but those projects never see the sweep: its name and tags stay with the
project that asked for it.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from zootriage.app.db.models import ACTIVE_STATUSES, Job, Run, Sweep, SweepMember
from zootriage.app.db.paging import PageKey, rows_after, split_page

_ACTIVE = [s.value for s in ACTIVE_STATUSES]


@dataclass(frozen=True)
class MemberRow:
    member: SweepMember
    job: Job | None


def sweep_by_id(session: Session, sweep_id: uuid.UUID) -> Sweep | None:
    return session.get(Sweep, sweep_id)


def in_projects(ids: Collection[int]) -> ColumnElement[bool]:
    """Whether the sweep (of the enclosing query) was created in one of the projects ``ids``."""
    return Sweep.project_id.in_(list(ids))


def sweep_in_projects(session: Session, sweep_id: uuid.UUID, ids: Collection[int]) -> bool:
    return session.scalar(select(Sweep.id).where(Sweep.id == sweep_id, in_projects(ids))) is not None


def members_of(session: Session, sweep_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, list[MemberRow]]:
    """Each sweep's members in order, with the job each one follows (None: a stored run, or a job
    since deleted)."""
    if not sweep_ids:
        return {}
    rows = session.execute(
        select(SweepMember, Job)
        .outerjoin(Job, Job.id == SweepMember.job_id)
        .where(SweepMember.sweep_id.in_(list(sweep_ids)))
        .order_by(SweepMember.sweep_id, SweepMember.position)
    ).all()
    found: dict[uuid.UUID, list[MemberRow]] = {sweep_id: [] for sweep_id in sweep_ids}
    for member, job in rows:
        found[member.sweep_id].append(MemberRow(member, job))
    return found


def runs_by_id(session: Session, run_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, Run]:
    if not run_ids:
        return {}
    return {run.id: run for run in session.scalars(select(Run).where(Run.id.in_(list(run_ids))))}


def own_active_jobs(session: Session, sweep_id: uuid.UUID) -> list[uuid.UUID]:
    """The sweep's own jobs still held, queued or running."""
    query = select(Job.id).where(Job.sweep_id == sweep_id, Job.status.in_(_ACTIVE))
    return list(session.scalars(query.order_by(Job.created_at, Job.id)))


def list_sweeps(
    session: Session, *, limit: int, after: PageKey | None = None, projects: Collection[int] | None = None
) -> tuple[list[Sweep], PageKey | None]:
    """One page of sweeps (of the projects ``projects`` when given; None: every one), newest first, and
    the key to continue from (None on the last page)."""
    query = select(Sweep)
    if projects is not None:
        query = query.where(in_projects(projects))
    if after is not None:
        query = query.where(rows_after(Sweep.created_at, Sweep.id, after, descending=True))
    rows = session.scalars(query.order_by(Sweep.created_at.desc(), Sweep.id.desc()).limit(limit + 1)).all()
    page, end = split_page(rows, limit)
    return page, (PageKey(end.created_at, end.id) if end is not None else None)
