"""Projects, their runs and their aliases: every query about them, in one place.

Membership. A run is stored once (its run key is unique across users), so it cannot *belong* to one
project the way a job or a gate does. It *joins* every project in which it was asked for: a row of
``project_runs`` is written

- when a job of a project finishes with a run, computed by it or found already stored
  (:func:`join_finished_job`, called by ``app.db.job_lifecycle.finish``), for the job's own project and
  for every project that joined the job while it was active (``project_jobs``, :func:`join_job`);
- when a request in a project is answered by a stored run without a job (:func:`join_runs`);
- when a gate of a project compares a stored run, or an alias of a project is pointed at one.

Writing a membership twice is harmless (an insert that ignores the existing row), so these never race.
The trends page reads :func:`project_runs` (the runs of a project through any run filter) and
:func:`alias_history` (where an alias pointed, move by move).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Table, exists, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from zootriage.app.db.models import Alias, AliasEvent, Job, Project, ProjectJob, ProjectRun, Run, utcnow
from zootriage.app.db.paging import CREATED, PageKey
from zootriage.app.project_names import DEFAULT_PROJECT


class UnknownProject(LookupError):
    """No project of that name (the default project is never unknown: it is made when first needed)."""

    code = "project_not_found"

    def __init__(self, name: str) -> None:
        self.message = f"no project {name!r} (create it with `zootriage projects create {name}`)"
        super().__init__(self.message)


class UnknownAlias(LookupError):
    code = "alias_not_found"

    def __init__(self, project: str, name: str) -> None:
        self.message = f"project {project!r} has no alias {name!r}"
        super().__init__(self.message)


def _insert_ignoring_duplicates(
    session: Session, table: Table, rows: Sequence[dict[str, Any]], returning: Any = None
) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING`` on PostgreSQL and SQLite alike; with ``returning`` (a
    column), its value for the one row inserted, or None when that row already existed."""
    if not rows:
        return None
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    statement = dialect.insert(table).values(list(rows)).on_conflict_do_nothing()
    if returning is None:
        session.execute(statement)
        return None
    return session.execute(statement.returning(returning)).scalar()


def _table(model: Any) -> Table:
    table: Table = model.__table__
    return table


# --- projects ------------------------------------------------------------------------------------------


def project_by_name(session: Session, name: str) -> Project | None:
    return session.scalar(select(Project).where(Project.name == name))


def create_project(session: Session, name: str, description: str | None = None) -> Project | None:
    """A new project, or None when the name is taken (the unique index decides, races included)."""
    row = {"name": name, "description": description, "created_at": utcnow()}
    made = _insert_ignoring_duplicates(session, _table(Project), [row], returning=Project.id)
    return None if made is None else session.get(Project, made)


def project_named(session: Session, name: str) -> Project:
    """The project called ``name``; the default project is created the first time it is needed (a
    user who never names a project never has to make one). :class:`UnknownProject` otherwise."""
    found = project_by_name(session, name)
    if found is not None:
        return found
    if name != DEFAULT_PROJECT:
        raise UnknownProject(name)
    made = create_project(session, name, "what was asked without naming a project")
    if made is not None:
        return made
    found = project_by_name(session, name)  # made by a concurrent request meanwhile
    assert found is not None
    return found


def list_projects(session: Session, names: Iterable[str] | None = None) -> list[Project]:
    """Every project by name (only those in ``names`` when given)."""
    query = select(Project).order_by(Project.name)
    if names is not None:
        query = query.where(Project.name.in_(list(names)))
    return list(session.scalars(query))


def project_ids(session: Session, names: Iterable[str]) -> list[int]:
    """The ids of the projects called ``names`` (names of no project are left out)."""
    return list(session.scalars(select(Project.id).where(Project.name.in_(list(names)))))


def project_names_by_id(session: Session, ids: Iterable[int]) -> dict[int, str]:
    wanted = set(ids)
    if not wanted:
        return {}
    rows = session.execute(select(Project.id, Project.name).where(Project.id.in_(wanted)))
    return {row.id: row.name for row in rows}


def projects_of_run(session: Session, run_id: uuid.UUID) -> list[str]:
    """The names of the projects a run has joined."""
    query = (
        select(Project.name)
        .join(ProjectRun, ProjectRun.project_id == Project.id)
        .where(ProjectRun.run_id == run_id)
        .order_by(Project.name)
    )
    return list(session.scalars(query))


def project_counts(session: Session, project_id: int) -> dict[str, int]:
    """How many runs, jobs and aliases a project has."""
    from sqlalchemy import func

    def count(column: Any, where: ColumnElement[bool]) -> int:
        return int(session.scalar(select(func.count(column)).where(where)) or 0)

    return {
        "runs": count(ProjectRun.run_id, ProjectRun.project_id == project_id),
        "jobs": count(Job.id, Job.project_id == project_id),
        "aliases": count(Alias.id, Alias.project_id == project_id),
    }


# --- membership ----------------------------------------------------------------------------------------


def in_projects(names: Sequence[str]) -> ColumnElement[bool]:
    """The condition "the run has joined one of the projects called ``names``" (for ``Run`` queries):
    an EXISTS on the membership's primary key."""
    ids = select(Project.id).where(Project.name.in_(list(names)))
    return _joined(ids.scalar_subquery())


def in_project_ids(ids: Sequence[int]) -> ColumnElement[bool]:
    """:func:`in_projects` for the projects' ids."""
    return _joined(list(ids))


def _joined(ids: Any) -> ColumnElement[bool]:
    return exists().where(ProjectRun.run_id == Run.id, ProjectRun.project_id.in_(ids))


def runs_in_projects(
    session: Session, run_ids: Collection[uuid.UUID], ids: Sequence[int]
) -> set[uuid.UUID]:
    """Which of ``run_ids`` have joined one of the projects ``ids`` (one query, however many runs)."""
    if not run_ids:
        return set()
    query = select(ProjectRun.run_id).where(
        ProjectRun.run_id.in_(list(run_ids)), ProjectRun.project_id.in_(list(ids))
    )
    return set(session.scalars(query.distinct()))


def job_in_projects(session: Session, job_id: uuid.UUID, ids: Sequence[int]) -> bool:
    """Whether the job belongs to one of the projects ``ids`` or one of them joined it."""
    wanted = list(ids)
    own = select(Job.id).where(Job.id == job_id, Job.project_id.in_(wanted))
    joined = select(ProjectJob.job_id).where(ProjectJob.job_id == job_id, ProjectJob.project_id.in_(wanted))
    return session.scalar(own.union(joined).limit(1)) is not None


def join_runs(session: Session, project_id: int, run_ids: Iterable[uuid.UUID]) -> None:
    """The runs join the project (those already in it stay as they are)."""
    now = utcnow()
    rows = [
        {"project_id": project_id, "run_id": run_id, "created_at": now} for run_id in dict.fromkeys(run_ids)
    ]
    _insert_ignoring_duplicates(session, _table(ProjectRun), rows)


def join_job(session: Session, project_id: int, job: Job) -> None:
    """A project asked for ``job`` of another project while it was active: its run joins this project
    too when the job finishes (:func:`join_finished_job`)."""
    if job.project_id == project_id:
        return
    rows = [{"project_id": project_id, "job_id": job.id}]
    _insert_ignoring_duplicates(session, _table(ProjectJob), rows)
    if job.run_id is not None:  # it finished while we looked: nothing will add the run later
        join_runs(session, project_id, [job.run_id])


def join_finished_job(session: Session, job_id: uuid.UUID, run_id: uuid.UUID) -> None:
    """The run that answered a job joins the job's project and every project that joined the job."""
    own = session.scalar(select(Job.project_id).where(Job.id == job_id))
    joined = session.scalars(select(ProjectJob.project_id).where(ProjectJob.job_id == job_id))
    for project_id in dict.fromkeys([*([own] if own is not None else []), *joined]):
        join_runs(session, project_id, [run_id])


def project_runs(
    session: Session,
    project: str,
    flt: Any = None,
    *,
    limit: int,
    sort: str = CREATED,
    descending: bool = True,
    after: PageKey | None = None,
) -> tuple[list[Run], PageKey | None]:
    """One page of the runs of ``project`` (a name) matching ``flt`` (an ``app.db.run_queries.RunFilter``,
    none: every run), in ``list_runs``' order and paging; :class:`UnknownProject` for no such project."""
    from dataclasses import replace

    from zootriage.app.db.run_queries import RunFilter, list_runs

    found = project_named(session, project)
    scoped = replace(flt if flt is not None else RunFilter(), projects=(found.name,))
    return list_runs(session, scoped, sort=sort, descending=descending, limit=limit, after=after)


# --- aliases ---------------------------------------------------------------------------------------------


def alias_by_name(session: Session, project_id: int, name: str) -> Alias | None:
    return session.scalar(select(Alias).where(Alias.project_id == project_id, Alias.name == name))


def aliases_of(session: Session, project_id: int) -> list[Alias]:
    return list(session.scalars(select(Alias).where(Alias.project_id == project_id).order_by(Alias.name)))


def move_alias(
    session: Session,
    project_id: int,
    name: str,
    run_id: uuid.UUID,
    actor: str | None,
    actor_key_id: int | None,
) -> tuple[Alias, AliasEvent | None]:
    """Point the alias at ``run_id`` (creating it on first use) and record the move; the run joins the
    project. Pointing it where it already points records nothing (the event is None). The alias row is
    locked while it moves, so two moves at once are recorded one after the other, each from the run
    the other left."""
    now = utcnow()
    row = {"project_id": project_id, "name": name, "run_id": None, "created_at": now, "updated_at": now}
    _insert_ignoring_duplicates(session, _table(Alias), [row])  # on first use; a concurrent one wins
    alias = session.scalar(
        select(Alias).where(Alias.project_id == project_id, Alias.name == name).with_for_update()
    )
    assert alias is not None
    join_runs(session, project_id, [run_id])
    if alias.run_id == run_id:
        return alias, None
    event = AliasEvent(
        alias_id=alias.id,
        from_run_id=alias.run_id,
        to_run_id=run_id,
        actor=actor,
        actor_key_id=actor_key_id,
        created_at=now,
    )
    alias.run_id = run_id
    alias.updated_at = now
    session.add(event)
    session.flush()
    return alias, event


def alias_history(session: Session, project: str, alias: str) -> list[AliasEvent]:
    """Every move of ``alias`` in ``project`` (names), oldest first: ``from_run_id`` (None for the
    first), ``to_run_id``, who (``actor``, ``actor_key_id``) and when (``created_at``).
    :class:`UnknownProject` / :class:`UnknownAlias` when either does not exist."""
    found = project_named(session, project)
    row = alias_by_name(session, found.id, alias)
    if row is None:
        raise UnknownAlias(project, alias)
    query = (
        select(AliasEvent).where(AliasEvent.alias_id == row.id).order_by(AliasEvent.created_at, AliasEvent.id)
    )
    return list(session.scalars(query))
