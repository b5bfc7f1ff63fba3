"""``/jobs``: every job of the projects the viewer's key may use, newest first, a page at a time (the
service behind ``GET /v1/jobs``), filtered by status; each links to its run, or shows the error it
failed on."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from zootriage.app.api.cursor import CURSOR_MAX, decode_cursor, encode_cursor
from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.db.models import JobStatus
from zootriage.app.db.paging import CREATED
from zootriage.app.services import jobs as job_service
from zootriage.app.services import projects as project_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.ui.session import page_caller
from zootriage.app.ui.templating import render

router = APIRouter()
PAGE = 50


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    status: Annotated[str, Query(max_length=16)] = "",
    cursor: Annotated[str | None, Query(max_length=CURSOR_MAX)] = None,
) -> HTMLResponse:
    """A blank status is every job; one that is no status is shown as an error on the page."""
    statuses = [s.value for s in JobStatus]
    context = {"jobs": [], "status": status, "statuses": statuses, "next_url": None}
    try:
        if status and status not in statuses:
            raise ServiceError(422, "invalid_request", f"status {status[:16]!r} is not one of {statuses}")
        after = decode_cursor(cursor, CREATED, True) if cursor else None
        shown = project_service.visible_project_ids(session, page_caller(request, session, settings), None)
        wanted = JobStatus(status) if status else None
        jobs, next_key = job_service.job_page(session, PAGE, after, wanted, shown)
    except ServiceError as exc:
        return render(request, "jobs.html", {**context, "error": exc}, status=exc.status)
    if next_key is not None:
        query = [("status", status)] if status else []
        token = encode_cursor(next_key, CREATED, True)
        context["next_url"] = "/jobs?" + urlencode([*query, ("cursor", token)])
    return render(request, "jobs.html", {**context, "jobs": jobs, "first_page": cursor is None})
