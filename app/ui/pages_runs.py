"""``/runs`` (the history, through the same filter and query as GET /v1/runs), its CSV, and ``/runs/{id}``."""

from __future__ import annotations

import uuid
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, StreamingResponse

from zootriage.app.api.cursor import Cursor, PageLimit
from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.api.run_query import RunQueryDep
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.runs import run_page_parts
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
    try:
        shown = run_page_parts(session, run_id)
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    return render(request, "run.html", {"run": shown.run, "markers": shown.markers, "job": shown.job})
