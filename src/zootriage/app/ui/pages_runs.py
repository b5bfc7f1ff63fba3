"""``/runs`` (the history, through the same filter and query as GET /v1/runs), its CSV, ``/runs/{id}``
and its labels form (the service behind ``PATCH /v1/runs/{id}``, behind the pages' CSRF and write checks)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from pydantic import ValidationError

from zootriage.app.api.cursor import Cursor, PageLimit
from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.api.run_query import RunQueryDep
from zootriage.app.labels import NAME_CHARS, BadLabel, parse_tags
from zootriage.app.schemas.runs import RunLabels
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.runs import relabel, run_page_parts
from zootriage.app.ui.session import check_write
from zootriage.app.ui.templating import render
from zootriage.core.markers import list_markers

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
    context.update(runs=[])
    try:
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
def history_csv(settings: SettingsDep, query: RunQueryDep) -> StreamingResponse:
    return query.csv(settings.effective_database_url)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: uuid.UUID, session: SessionDep) -> HTMLResponse:
    return _run_page(request, session, run_id)


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
    context = {
        "run": shown.run,
        "markers": shown.markers,
        "job": shown.job,
        "labels": form or {"name": shown.run.name or "", "tags": tags},
        "label_error": error,
        "name_chars": NAME_CHARS,
    }
    return render(request, "run.html", context, status=error.status if error else 200)


def _labels_of(form: dict[str, str]) -> RunLabels:
    """The form says the whole new name and tag set (``k=v, k=v``); an empty name removes it."""
    try:
        tags = parse_tags(form.get("tags", ""))
        return RunLabels.model_validate({"name": form.get("name", "").strip() or None, "tags": tags})
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
    try:
        check_write(request, session, settings, form.get("csrf"))
        relabel(session, run_id, _labels_of(form), replace_tags=True)
    except ServiceError as exc:
        sent = {"name": form.get("name", ""), "tags": form.get("tags", "")}
        return _run_page(request, session, run_id, sent, exc)
    return RedirectResponse(f"/runs/{run_id}", status_code=303)
