"""``/gates`` and ``/gates/{id}`` (the id or a unique prefix of it): CI-gate decisions with each rule, its
values and its verdict."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from zootriage.app.api.cursor import CURSOR_MAX, decode_cursor, encode_cursor
from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.db.paging import CREATED
from zootriage.app.project_names import SLUG_CHARS
from zootriage.app.services import gates as gate_service
from zootriage.app.services import projects as project_service
from zootriage.app.services import short_ids
from zootriage.app.services.errors import ServiceError
from zootriage.app.ui.session import page_caller
from zootriage.app.ui.templating import render

router = APIRouter()
PAGE = 50


@router.get("/gates", response_class=HTMLResponse)
def gates_page(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    cursor: Annotated[str | None, Query(max_length=CURSOR_MAX)] = None,
    project: Annotated[str | None, Query(max_length=SLUG_CHARS)] = None,
) -> HTMLResponse:
    """The decisions, newest first, of one project (``?project=``) or of every project the key may use."""
    project = project or None  # the form's "all" sends it blank
    try:
        after = decode_cursor(cursor, CREATED, True) if cursor else None
        caller = page_caller(request, session, settings)
        shown = project_service.visible_project_ids(session, caller, project)
        projects = [p.name for p in project_service.list_projects(session, caller)]
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    gates, next_key = gate_service.gate_page(session, PAGE, after, None, shown)
    where = f"&project={project}" if project else ""
    next_url = f"/gates?cursor={encode_cursor(next_key, CREATED, True)}{where}" if next_key else None
    context = {"gates": gates, "next_url": next_url, "projects": projects, "project": project}
    return render(request, "gates.html", context)


@router.get("/gates/{gate_id}", response_class=HTMLResponse)
def gate_page(
    request: Request,
    gate_id: Annotated[str, Path(max_length=short_ids.ID_TEXT_MAX)],
    session: SessionDep,
    settings: SettingsDep,
) -> Response:
    """One decision; a unique prefix of its id redirects to the page under its full id."""
    try:
        found = short_ids.resolve_uuid(session, short_ids.GATE, gate_id)
        if str(found) != gate_id:
            return RedirectResponse(f"/gates/{found}", status_code=303)
        gate = gate_service.find_gate(session, found, page_caller(request, session, settings))
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    return render(request, "gate.html", {"gate": gate})
