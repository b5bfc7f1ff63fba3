"""The project a request works in or lists, as route dependencies: ``?project=NAME`` on any route, and
``{project}`` in ``/v1/projects/{project}/...``; both checked against the key's projects (403) before
the project is looked up (404). See ``app.services.projects``."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends, Path, Query
from sqlalchemy.orm import Session

from zootriage.app.api.deps import CallerDep, SessionDep
from zootriage.app.api.ids import JobId, RunId, SweepId
from zootriage.app.api.run_query import RunQuery, RunQueryDep
from zootriage.app.api_keys import Caller
from zootriage.app.db.models import Project
from zootriage.app.project_names import SLUG_CHARS
from zootriage.app.services import projects as project_service
from zootriage.app.services import sweeps as sweep_service

ProjectParam = Annotated[
    str | None,
    Query(
        max_length=SLUG_CHARS,
        description="the project (default: the default project when writing, every project the key may "
        "use when listing)",
    ),
]


def _work_project(session: SessionDep, caller: CallerDep, project: ProjectParam = None) -> Project:
    return project_service.project_for(session, caller, project)


def _listed_projects(
    session: SessionDep, caller: CallerDep, project: ProjectParam = None
) -> tuple[int, ...] | None:
    return project_service.visible_project_ids(session, caller, project)


def _path_project(
    session: SessionDep, caller: CallerDep, project: Annotated[str, Path(max_length=SLUG_CHARS)]
) -> Project:
    return project_service.project_for(session, caller, project)


def scope_run_query(session: Session, caller: Caller | None, query: RunQuery) -> RunQuery:
    """The history query, limited to its ``project`` (checked: 403, 404, 422) or else to the key's own
    projects (``app.services.projects.visible_project_ids``); the API's ``GET /v1/runs`` and the
    ``/runs`` page share it."""
    query.scope = project_service.visible_project_names(session, caller, query.project or None)
    return query


def _scoped_run_query(session: SessionDep, caller: CallerDep, query: RunQueryDep) -> RunQuery:
    return scope_run_query(session, caller, query)


def _visible_job(job_id: JobId, session: SessionDep, caller: CallerDep) -> uuid.UUID:
    project_service.check_job_visible(session, caller, job_id)
    return job_id


def _visible_sweep(sweep_id: SweepId, session: SessionDep, caller: CallerDep) -> uuid.UUID:
    sweep_service.check_visible(session, caller, sweep_id)
    return sweep_id


def _visible_run(run_id: RunId, session: SessionDep, caller: CallerDep) -> uuid.UUID:
    project_service.check_run_visible(session, caller, run_id)
    return run_id


# A job by its id or a unique prefix (``app.api.ids.JobId``), 403 when the key may not see it.
VisibleJobId = Annotated[uuid.UUID, Depends(_visible_job)]
# A sweep by its id or a unique prefix (``app.api.ids.SweepId``), 403 when its jobs are in none of the
# key's projects.
VisibleSweepId = Annotated[uuid.UUID, Depends(_visible_sweep)]
# The history query of ``GET /v1/runs``, within the projects the key may use.
ScopedRunQuery = Annotated[RunQuery, Depends(_scoped_run_query)]
# A run by its id or a unique prefix (``app.api.ids.RunId``), 403 when the key may not see it.
VisibleRunId = Annotated[uuid.UUID, Depends(_visible_run)]
# The project a write works in (``?project=``, else the default project).
WorkProject = Annotated[Project, Depends(_work_project)]
# The ids of the projects a listing shows (``?project=``, else the key's own); None: every project.
ListedProjects = Annotated[tuple[int, ...] | None, Depends(_listed_projects)]
PathProject = Annotated[Project, Depends(_path_project)]
