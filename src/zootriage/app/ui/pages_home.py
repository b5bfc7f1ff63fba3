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
from zootriage.app.services import runs as run_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.ui.session import check_write
from zootriage.app.ui.templating import render

router = APIRouter()
RECENT = 10


def _jobs(session: SessionDep) -> tuple[list[Job], list[Job]]:
    return job_service.active_and_recent(session, RECENT)


@router.get("/", response_class=HTMLResponse)
def home(request: Request, session: SessionDep) -> HTMLResponse:
    running, finished = _jobs(session)
    runs, _ = run_service.history_page(session, RunFilter(), CREATED, True, RECENT, None)
    gates, _ = gate_service.gate_page(session, RECENT, None)
    context = {"running": running, "finished": finished, "runs": runs, "gates": gates}
    return render(request, "home.html", context)


@router.get("/ui/jobs", response_class=HTMLResponse)
def jobs_fragment(request: Request, session: SessionDep) -> HTMLResponse:
    """The live jobs table alone, which ``/`` polls (HTMX ``every 1s``) for progress without a reload."""
    running, finished = _jobs(session)
    return render(request, "jobs_table.html", {"running": running, "finished": finished})


@router.post("/ui/jobs/{job_id}/cancel", response_class=HTMLResponse)
def cancel(request: Request, job_id: uuid.UUID, session: SessionDep, settings: SettingsDep) -> HTMLResponse:
    message = None
    try:
        check_write(request, session, settings)
        job_service.cancel(session, settings, job_service.find_job(session, job_id))
    except ServiceError as exc:
        message = f"{exc.code}: {exc.message}"
    running, finished = _jobs(session)
    return render(request, "jobs_table.html", {"running": running, "finished": finished, "error": message})
