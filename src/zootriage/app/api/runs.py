"""The run history: browse, filter, sort by any marker, page with a cursor, export as CSV; relabel,
describe, archive and restore a run (by its id or a unique prefix of it)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from zootriage.app.api.cursor import Cursor, PageLimit
from zootriage.app.api.deps import SessionDep, SettingsDep, WriteAccess
from zootriage.app.api.errors import responses
from zootriage.app.api.project_scope import ScopedRunQuery, VisibleRunId
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
    query: ScopedRunQuery,
    limit: PageLimit = 50,
    cursor: Cursor = None,
    output: Annotated[Format, Query(alias="format")] = Format.json,
) -> RunPage | StreamingResponse:
    if output is Format.csv:
        return query.csv(settings.effective_database_url)
    items, next_cursor = query.page(session, min(limit, settings.page_size_max), cursor)
    return RunPage(items=items, next_cursor=next_cursor)


@router.get("/{run_id}", response_model=RunDetail, responses=responses(404, 409, 422))
def get_run(run_id: VisibleRunId, session: SessionDep) -> RunDetail:
    """One run in full, archived or not (``archived_at``)."""
    return run_service.run_detail(session, run_id)


@router.patch("/{run_id}", response_model=RunDetail, responses=responses(401, 403, 404, 409, 422))
def patch_run(_: WriteAccess, run_id: VisibleRunId, labels: RunLabels, session: SessionDep) -> RunDetail:
    """Rename, describe or retag a run (a JSON merge patch: ``name`` and ``description`` replace,
    ``null`` removes; each tag given is set, or removed when ``null``). Labels change no number, so
    they may change after scoring; what the run computed may not. Needs the write scope."""
    return run_service.relabel(session, run_id, labels)


@router.post("/{run_id}/archive", response_model=RunDetail, responses=responses(401, 403, 404, 409, 422))
def archive_run(_: WriteAccess, run_id: VisibleRunId, session: SessionDep) -> RunDetail:
    """Archive a run: nothing is deleted. It leaves the default history (``?archived=include|only``
    lists it), the stored-run recommendations and the trends; it is still found by id, and gates and
    rankings that name it still use it (their answers say it is archived). Archiving again changes
    nothing. Needs the write scope."""
    return run_service.set_archived_state(session, run_id, archived=True)


@router.post("/{run_id}/restore", response_model=RunDetail, responses=responses(401, 403, 404, 409, 422))
def restore_run(_: WriteAccess, run_id: VisibleRunId, session: SessionDep) -> RunDetail:
    """Bring an archived run back into the history and every listing. Needs the write scope."""
    return run_service.set_archived_state(session, run_id, archived=False)
