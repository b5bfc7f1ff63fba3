"""Sweeps: one request scores many models (a list, the v1/v2 preset, a timm filter) on one dataset.

``POST /v1/sweeps`` answers 201 with the sweep (its jobs queued a few at a time), ``GET`` follows its
progress and, once no job is left to run, its ranking; ``DELETE`` cancels the jobs it still has.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from zootriage.app.api.cursor import Cursor, PageLimit, decode_cursor, encode_cursor
from zootriage.app.api.deps import SessionDep, SettingsDep, WriteAccess
from zootriage.app.api.errors import responses
from zootriage.app.api.project_scope import ListedProjects, VisibleSweepId, WorkProject
from zootriage.app.db.paging import CREATED
from zootriage.app.schemas.sweeps import SweepOut, SweepPage, SweepRequest
from zootriage.app.services import sweeps as sweep_service

router = APIRouter(prefix="/v1/sweeps", tags=["sweeps"])


@router.post(
    "", status_code=201, response_model=SweepOut, responses=responses(401, 403, 404, 409, 413, 422, 503)
)
def post_sweep(
    body: SweepRequest, session: SessionDep, settings: SettingsDep, _: WriteAccess, project: WorkProject
) -> JSONResponse:
    """One job per model (a model already scored under this protocol is answered by its run), at most
    ``sweep_in_flight`` of them queued at a time so that other users' jobs interleave; every job and
    run is in ``?project=`` (default: the default project, as for ``POST /v1/jobs``)."""
    sweep = sweep_service.create(session, settings, body, project.id)
    return JSONResponse(
        sweep.model_dump(mode="json"), status_code=201, headers={"Location": f"/v1/sweeps/{sweep.id}"}
    )


@router.get("", response_model=SweepPage, responses=responses(403, 404, 422))
def get_sweeps(
    session: SessionDep,
    settings: SettingsDep,
    projects: ListedProjects,
    limit: PageLimit = 50,
    cursor: Cursor = None,
) -> SweepPage:
    """Sweeps with their progress, newest first: those whose jobs are in ``?project=`` or else in any
    project the key may use."""
    after = decode_cursor(cursor, CREATED, True) if cursor else None
    items, next_key = sweep_service.sweep_page(session, min(limit, settings.page_size_max), after, projects)
    return SweepPage(items=items, next_cursor=encode_cursor(next_key, CREATED, True) if next_key else None)


@router.get("/{sweep_id}", response_model=SweepOut, responses=responses(403, 404, 409, 422))
def get_sweep(sweep_id: VisibleSweepId, session: SessionDep) -> SweepOut:
    return sweep_service.find(session, sweep_id)


@router.delete("/{sweep_id}", response_model=SweepOut, responses=responses(401, 403, 404, 409, 422))
def cancel_sweep(
    _: WriteAccess, sweep_id: VisibleSweepId, session: SessionDep, settings: SettingsDep
) -> SweepOut:
    """Cancel the sweep's jobs still held, queued or running; 409 when none is left."""
    return sweep_service.cancel(session, settings, sweep_id)
