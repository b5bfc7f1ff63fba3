"""``/runs`` (the history, through the same filter and query as GET /v1/runs), its CSV, ``/runs/{id}``
(the id or a unique prefix of it), its labels form (the service behind ``PATCH /v1/runs/{id}``) and its
archive and restore buttons (behind ``POST /v1/runs/{id}/archive|restore``), each behind the pages' CSRF
and write checks."""

from __future__ import annotations

import uuid
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from zootriage.app.api.cursor import Cursor, PageLimit
from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.api.project_scope import scope_run_query
from zootriage.app.api.run_query import RunQueryDep
from zootriage.app.labels import DESCRIPTION_CHARS, NAME_CHARS, BadLabel, parse_tags
from zootriage.app.schemas.runs import RunLabels
from zootriage.app.services import short_ids
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.projects import check_run_visible, list_projects
from zootriage.app.services.runs import relabel, run_page_parts, set_archived_state
from zootriage.app.ui.session import check_write, page_caller
from zootriage.app.ui.templating import render
from zootriage.core.catalogue.markers import list_markers

router = APIRouter()

# Shown until the user picks columns: the GLUE geometry and the accuracy the verdicts are compared with.
DEFAULT_COLUMNS = ("capacity", "dimension", "radius", "utilization", "id_accuracy")
PAGE = 50


@router.get("/runs", response_class=HTMLResponse)
def history(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    query: RunQueryDep,
    cursor: Cursor = None,
    cols: Annotated[list[str] | None, Query(max_length=64)] = None,
    limit: PageLimit = PAGE,
) -> HTMLResponse:
    names = [spec.name for spec in list_markers()]
    columns = [c for c in (cols or DEFAULT_COLUMNS) if c in names]
    params = {**query.texts(), "limit": str(limit) if limit != PAGE else None}
    tags = query.tags
    context: dict[str, Any] = {"params": params, "tags": tags, "names": names, "columns": columns}
    context.update(runs=[], projects=[])
    try:
        caller = page_caller(request, session, settings)
        context["projects"] = [p.name for p in list_projects(session, caller)]
        scope_run_query(session, caller, query)
        runs, next_cursor = query.page(session, min(limit, settings.page_size_max), cursor)
    except ServiceError as exc:
        return render(request, "runs.html", {**context, "error": exc}, status=exc.status)
    shown = [(k, v) for k, v in params.items() if v is not None] + [("tag", t) for t in tags]
    shown += [("cols", c) for c in columns]
    csv_query = [(k, v) for k, v in shown if k != "limit"]
    context.update(
        runs=runs,
        next_url="/runs?" + urlencode([*shown, ("cursor", next_cursor)]) if next_cursor else None,
        csv_url="/runs.csv?" + urlencode(csv_query),
        first_page=cursor is None,
        query=urlencode(shown),
    )
    return render(request, "runs.html", context)


@router.get("/runs.csv")
def history_csv(request: Request, session: SessionDep, settings: SettingsDep, query: RunQueryDep) -> Response:
    """The history as CSV, of the projects the caller's key may use (``GET /v1/runs?format=csv``)."""
    try:
        scope_run_query(session, page_caller(request, session, settings), query)
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    return query.csv(settings.effective_database_url)


IdText = Annotated[str, Path(max_length=short_ids.ID_TEXT_MAX)]


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: IdText, session: SessionDep, settings: SettingsDep) -> Response:
    """The run's page; a unique prefix of its id redirects to the page under its full id. 403 for a
    run in none of the projects the caller's key may use, as ``GET /v1/runs/{id}``."""
    try:
        found = short_ids.resolve_uuid(session, short_ids.RUN, run_id)
        check_run_visible(session, page_caller(request, session, settings), found)
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    if str(found) != run_id:
        return RedirectResponse(f"/runs/{found}", status_code=303)
    return _run_page(request, session, found)


def _hidden(
    request: Request, session: SessionDep, settings: SettingsDep, run_id: uuid.UUID
) -> Response | None:
    """The error page for a run the caller's key may not see, before anything of the run is shown
    (a form refused for any reason shows the run's page again); None when it may."""
    try:
        check_run_visible(session, page_caller(request, session, settings), run_id)
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    return None


def _run_page(
    request: Request,
    session: SessionDep,
    run_id: uuid.UUID,
    form: dict[str, str] | None = None,
    error: ServiceError | None = None,
) -> HTMLResponse:
    """The run's page; with the labels form as it was sent and the ``{code, message}`` that refused it."""
    try:
        shown = run_page_parts(session, run_id)
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    tags = ", ".join(f"{key}={value}" for key, value in shown.run.tag_map.items())
    stored = {"name": shown.run.name or "", "tags": tags, "description": shown.run.description or ""}
    context = {
        "run": shown.run,
        "markers": shown.markers,
        "job": shown.job,
        "labels": form or stored,
        "label_error": error,
        "name_chars": NAME_CHARS,
        "description_chars": DESCRIPTION_CHARS,
    }
    return render(request, "run.html", context, status=error.status if error else 200)


def _labels_of(form: dict[str, str]) -> RunLabels:
    """The form says the whole new name, description and tag set (``k=v, k=v``); an empty name or
    description removes it. A browser sends a text area's line breaks as CRLF: they are kept as LF."""
    try:
        tags = parse_tags(form.get("tags", ""))
        description = form.get("description", "").replace("\r\n", "\n").strip() or None
        body = {"name": form.get("name", "").strip() or None, "description": description, "tags": tags}
        return RunLabels.model_validate(body)
    except BadLabel as exc:
        raise ServiceError(422, "invalid_request", f"tags: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "labels"
        raise ServiceError(422, "invalid_request", f"{where}: {first['msg']}") from None


@router.post("/runs/{run_id}/labels", response_class=HTMLResponse)
async def run_labels(
    request: Request, run_id: uuid.UUID, session: SessionDep, settings: SettingsDep
) -> Response:
    """Rename or retag the run, then back to its page (303); the page with the refusal otherwise."""
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    if (hidden := _hidden(request, session, settings, run_id)) is not None:
        return hidden
    try:
        check_write(request, session, settings, form.get("csrf"))
        relabel(session, run_id, _labels_of(form), replace_tags=True)
    except ServiceError as exc:
        sent = {key: form.get(key, "") for key in ("name", "tags", "description")}
        return _run_page(request, session, run_id, sent, exc)
    return RedirectResponse(f"/runs/{run_id}", status_code=303)


async def _set_archived(
    request: Request, run_id: uuid.UUID, session: SessionDep, settings: SettingsDep, archived: bool
) -> Response:
    """The archive and restore buttons: the run's state changed, then back to its page (303); the page
    with the refusal otherwise."""
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    if (hidden := _hidden(request, session, settings, run_id)) is not None:
        return hidden
    try:
        check_write(request, session, settings, form.get("csrf"))
        set_archived_state(session, run_id, archived=archived)
    except ServiceError as exc:
        return _run_page(request, session, run_id, None, exc)
    return RedirectResponse(f"/runs/{run_id}", status_code=303)


@router.post("/runs/{run_id}/archive", response_class=HTMLResponse)
async def run_archive(
    request: Request, run_id: uuid.UUID, session: SessionDep, settings: SettingsDep
) -> Response:
    return await _set_archived(request, run_id, session, settings, archived=True)


@router.post("/runs/{run_id}/restore", response_class=HTMLResponse)
async def run_restore(
    request: Request, run_id: uuid.UUID, session: SessionDep, settings: SettingsDep
) -> Response:
    return await _set_archived(request, run_id, session, settings, archived=False)
