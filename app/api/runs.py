"""The run history: browse, filter, sort by any marker, page with a cursor, export as CSV."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from zootriage.app.api.cursor import Cursor, PageLimit, decode_cursor, encode_cursor
from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.api.errors import responses
from zootriage.app.db.paging import CREATED
from zootriage.app.db.run_queries import RunFilter
from zootriage.app.schemas.runs import RunDetail, RunPage
from zootriage.app.services import runs as run_service

router = APIRouter(prefix="/v1/runs", tags=["runs"])

MARKER_NAME = r"^[A-Za-z0-9_.\-]{1,64}$"


class Order(StrEnum):
    asc = "asc"
    desc = "desc"


class Format(StrEnum):
    json = "json"
    csv = "csv"


@router.get(
    "",
    response_model=RunPage,
    responses={**responses(422), 200: {"content": {"text/csv": {}}}},
)
def get_runs(
    session: SessionDep,
    settings: SettingsDep,
    architecture: str | None = None,
    name: Annotated[str | None, Query(max_length=128, description="runs with exactly this name")] = None,
    tag: Annotated[
        list[str] | None,
        Query(max_length=16, description="key=value; repeat for several, every one must hold"),
    ] = None,
    weights: Annotated[str | None, Query(description="weights sha256")] = None,
    dataset: Annotated[str | None, Query(description="dataset fingerprint")] = None,
    marker: Annotated[str | None, Query(pattern=MARKER_NAME, description="filter on this marker")] = None,
    marker_min: Annotated[
        float | None, Query(alias="min", description="marker lower bound, inclusive")
    ] = None,
    marker_max: Annotated[
        float | None, Query(alias="max", description="marker upper bound, inclusive")
    ] = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    sort: Annotated[str, Query(pattern=MARKER_NAME, description="'created_at' or a marker name")] = CREATED,
    order: Order = Order.desc,
    limit: PageLimit = 50,
    cursor: Cursor = None,
    output: Annotated[Format, Query(alias="format")] = Format.json,
) -> RunPage | StreamingResponse:
    flt = RunFilter(
        architecture, weights, dataset, marker, marker_min, marker_max, created_after, created_before, name,
        run_service.tag_filter(tag or []),
    )
    flt = run_service.history_filter(flt, sort)
    descending = order is Order.desc
    if output is Format.csv:
        rows = run_service.csv_rows(settings.effective_database_url, flt, sort, descending)
        headers = {"Content-Disposition": 'attachment; filename="runs.csv"'}
        return StreamingResponse(rows, media_type="text/csv", headers=headers)
    after = decode_cursor(cursor, sort, descending) if cursor else None
    size = min(limit, settings.page_size_max)
    items, next_key = run_service.history_page(session, flt, sort, descending, size, after)
    return RunPage(
        items=items,
        next_cursor=encode_cursor(next_key, sort, descending) if next_key else None,
    )


@router.get("/{run_id}", response_model=RunDetail, responses=responses(404, 422))
def get_run(run_id: uuid.UUID, session: SessionDep) -> RunDetail:
    return run_service.run_detail(session, run_id)
