"""The run history: browse, filter, sort by any marker, page with a cursor, export as CSV; relabel a run."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from zootriage.app.api.cursor import Cursor, PageLimit
from zootriage.app.api.deps import SessionDep, SettingsDep, WriteAccess
from zootriage.app.api.errors import responses
from zootriage.app.api.run_query import RunQueryDep
from zootriage.app.schemas.runs import RunDetail, RunLabels, RunPage
from zootriage.app.services import runs as run_service

router = APIRouter(prefix="/v1/runs", tags=["runs"])


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
    query: RunQueryDep,
    limit: PageLimit = 50,
    cursor: Cursor = None,
    output: Annotated[Format, Query(alias="format")] = Format.json,
) -> RunPage | StreamingResponse:
    if output is Format.csv:
        return query.csv(settings.effective_database_url)
    items, next_cursor = query.page(session, min(limit, settings.page_size_max), cursor)
    return RunPage(items=items, next_cursor=next_cursor)


@router.get("/{run_id}", response_model=RunDetail, responses=responses(404, 422))
def get_run(run_id: uuid.UUID, session: SessionDep) -> RunDetail:
    return run_service.run_detail(session, run_id)


@router.patch("/{run_id}", response_model=RunDetail, responses=responses(401, 403, 404, 422))
def patch_run(run_id: uuid.UUID, labels: RunLabels, session: SessionDep, _: WriteAccess) -> RunDetail:
    """Rename or retag a run (a JSON merge patch: ``name`` replaces, ``null`` removes; each tag given is
    set, or removed when ``null``). Labels change no number, so they may change after scoring; what the
    run computed may not. Needs the write scope."""
    return run_service.relabel(session, run_id, labels)
