"""``/``: what is running now (live through an HTMX poll), recent runs and recent gates, and the forms."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.db.models import Job
from zootriage.app.db.paging import CREATED
from zootriage.app.db.run_queries import RunFilter
from zootriage.app.services import gates as gate_service
from zootriage.app.services import jobs as job_service
from zootriage.app.services import projects as project_service
from zootriage.app.services import runs as run_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.ui.session import check_write, page_caller
from zootriage.app.ui.templating import render

router = APIRouter()
RECENT = 10


def _projects(request: Request, session: SessionDep, settings: SettingsDep) -> tuple[int, ...] | None:
    """The projects the caller's key may use (None: every project, for a key without limits or on an
    open server)."""
    return project_service.visible_project_ids(session, page_caller(request, session, settings), None)


def _jobs(session: SessionDep, projects: tuple[int, ...] | None) -> tuple[list[Job], list[Job]]:
    return job_service.active_and_recent(session, RECENT, projects)


@router.get("/", response_class=HTMLResponse)
def home(request: Request, session: SessionDep, settings: SettingsDep) -> HTMLResponse:
    """What is running, the recent runs and gates: each of the projects the caller's key may use."""
    caller = page_caller(request, session, settings)
    ids = project_service.visible_project_ids(session, caller, None)
    running, finished = _jobs(session, ids)
    names = project_service.visible_project_names(session, caller, None)
    runs, _ = run_service.history_page(session, RunFilter(projects=names), CREATED, True, RECENT, None)
    gates, _ = gate_service.gate_page(session, RECENT, None, project_ids=ids)
    context = {"running": running, "finished": finished, "runs": runs, "gates": gates}
    return render(request, "home.html", context)


@router.get("/ui/jobs", response_class=HTMLResponse)
def jobs_fragment(request: Request, session: SessionDep, settings: SettingsDep) -> HTMLResponse:
    """The live jobs table alone, which ``/`` polls (HTMX ``every 1s``) for progress without a reload."""
    running, finished = _jobs(session, _projects(request, session, settings))
    return render(request, "jobs_table.html", {"running": running, "finished": finished})


@router.post("/ui/jobs/{job_id}/cancel", response_class=HTMLResponse)
def cancel(request: Request, job_id: uuid.UUID, session: SessionDep, settings: SettingsDep) -> HTMLResponse:
    """Cancel a job of a project the caller's key may use (``DELETE /v1/jobs/{id}``'s rules)."""
    message = None
    try:
        check_write(request, session, settings)
        project_service.check_job_visible(session, page_caller(request, session, settings), job_id)
        job_service.cancel(session, settings, job_service.find_job(session, job_id))
    except ServiceError as exc:
        message = f"{exc.code}: {exc.message}"
    running, finished = _jobs(session, _projects(request, session, settings))
    return render(request, "jobs_table.html", {"running": running, "finished": finished, "error": message})
