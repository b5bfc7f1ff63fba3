"""``/runs`` (the history, through the same filter and query as GET /v1/runs), its CSV, and ``/runs/{id}``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, StreamingResponse

from zootriage.app.api.cursor import CURSOR_MAX, PageLimit, decode_cursor, encode_cursor
from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.api.runs import MARKER_NAME
from zootriage.app.db.paging import CREATED
from zootriage.app.db.run_queries import RunFilter
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.runs import csv_rows, history_filter, history_page, run_page_parts, tag_filter
from zootriage.app.ui.templating import render
from zootriage.core.markers import list_markers

router = APIRouter()

# Shown until the user picks columns: the GLUE geometry and the accuracy the verdicts are compared with.
DEFAULT_COLUMNS = ("capacity", "dimension", "radius", "utilization", "id_accuracy")
PAGE = 50
Text = Annotated[str | None, Query(max_length=128)]
Tags = Annotated[list[str] | None, Query(max_length=16, description="key=value; every one must hold")]


def _blank_to_none(value: str | None) -> str | None:
    return value.strip() or None if value else None


def _given(tags: list[str] | None) -> list[str]:
    """The tag fields the user filled in (the form always sends one more, empty)."""
    return [text for text in (_blank_to_none(t) for t in tags or []) if text is not None]


@router.get("/runs", response_class=HTMLResponse)
def history(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    architecture: Text = None,
    name: Text = None,
    tag: Tags = None,
    weights: Text = None,
    dataset: Text = None,
    marker: Text = None,
    marker_min: Annotated[str | None, Query(alias="min", max_length=32)] = None,
    marker_max: Annotated[str | None, Query(alias="max", max_length=32)] = None,
    created_after: Annotated[str | None, Query(max_length=40)] = None,
    created_before: Annotated[str | None, Query(max_length=40)] = None,
    sort: Annotated[str, Query(pattern=MARKER_NAME)] = CREATED,
    order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
    cursor: Annotated[str | None, Query(max_length=CURSOR_MAX)] = None,
    cols: Annotated[list[str] | None, Query(max_length=64)] = None,
    limit: PageLimit = PAGE,
) -> HTMLResponse:
    names = [spec.name for spec in list_markers()]
    columns = [c for c in (cols or DEFAULT_COLUMNS) if c in names]
    params = {
        "architecture": _blank_to_none(architecture),
        "name": _blank_to_none(name),
        "weights": _blank_to_none(weights),
        "dataset": _blank_to_none(dataset),
        "marker": _blank_to_none(marker),
        "min": _blank_to_none(marker_min),
        "max": _blank_to_none(marker_max),
        "created_after": _blank_to_none(created_after),
        "created_before": _blank_to_none(created_before),
        "sort": sort,
        "order": order,
        "limit": str(limit) if limit != PAGE else None,
    }
    tags = _given(tag)
    context: dict[str, Any] = {"params": params, "tags": tags, "names": names, "columns": columns}
    context.update(runs=[])
    try:
        bounds = (params["marker"], _bound(params["min"], "min"), _bound(params["max"], "max"))
        flt = RunFilter(
            params["architecture"], params["weights"], params["dataset"], *bounds,
            created_after=_moment(params["created_after"], "created_after"),
            created_before=_moment(params["created_before"], "created_before"),
            name=params["name"], tags=tag_filter(tags),
        )
        flt = history_filter(flt, sort)
        descending = order == "desc"
        after = decode_cursor(cursor, sort, descending) if cursor else None
        size = min(limit, settings.page_size_max)
        runs, next_key = history_page(session, flt, sort, descending, size, after)
    except ServiceError as exc:
        return render(request, "runs.html", {**context, "error": exc}, status=exc.status)
    query = [(k, v) for k, v in params.items() if v is not None] + [("tag", t) for t in tags]
    query += [("cols", c) for c in columns]
    csv_query = [(k, v) for k, v in query if k != "limit"]
    next_url = None
    if next_key is not None:
        next_url = "/runs?" + urlencode([*query, ("cursor", encode_cursor(next_key, sort, descending))])
    context.update(
        runs=runs,
        next_url=next_url,
        csv_url="/runs.csv?" + urlencode(csv_query),
        first_page=cursor is None,
        query=urlencode(query),
    )
    return render(request, "runs.html", context)


def _bound(text: str | None, name: str) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise ServiceError(422, "invalid_request", f"{name}: {text!r} is not a number") from None


def _moment(text: str | None, name: str) -> datetime | None:
    """An ISO 8601 date or date-time from the form (``2026-01-31`` or ``2026-01-31T12:00``); one
    without a zone is UTC, as the stored ``created_at`` is."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ServiceError(
            422, "invalid_request", f"{name}: {text!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM)"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@router.get("/runs.csv")
def history_csv(
    settings: SettingsDep,
    architecture: Text = None,
    name: Text = None,
    tag: Tags = None,
    weights: Text = None,
    dataset: Text = None,
    marker: Text = None,
    marker_min: Annotated[float | None, Query(alias="min")] = None,
    marker_max: Annotated[float | None, Query(alias="max")] = None,
    created_after: Annotated[str | None, Query(max_length=40)] = None,
    created_before: Annotated[str | None, Query(max_length=40)] = None,
    sort: Annotated[str, Query(pattern=MARKER_NAME)] = CREATED,
    order: Annotated[str, Query(pattern="^(asc|desc)$")] = "desc",
) -> StreamingResponse:
    flt = RunFilter(
        architecture, weights, dataset, marker, marker_min, marker_max,
        created_after=_moment(_blank_to_none(created_after), "created_after"),
        created_before=_moment(_blank_to_none(created_before), "created_before"),
        name=_blank_to_none(name), tags=tag_filter(_given(tag)),
    )
    flt = history_filter(flt, sort)
    rows = csv_rows(settings.effective_database_url, flt, sort, order == "desc")
    headers = {"Content-Disposition": 'attachment; filename="runs.csv"'}
    return StreamingResponse(rows, media_type="text/csv", headers=headers)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: uuid.UUID, session: SessionDep) -> HTMLResponse:
    try:
        shown = run_page_parts(session, run_id)
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    return render(request, "run.html", {"run": shown.run, "markers": shown.markers, "job": shown.job})
