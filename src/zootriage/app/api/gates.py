"""CI gates: a candidate against a baseline by rules; decisions are stored and listed.

``POST /v1/gates`` answers 202 with the jobs while either side is being scored, and 201 with the
stored decision once both runs exist. Bad rules are refused (422) before anything is queued.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from zootriage.app.api.cursor import Cursor, PageLimit, decode_cursor, encode_cursor
from zootriage.app.api.deps import CallerDep, SessionDep, SettingsDep, WriteAccess
from zootriage.app.api.errors import responses
from zootriage.app.api.ids import GateId
from zootriage.app.api.project_scope import ListedProjects, WorkProject
from zootriage.app.db.paging import CREATED
from zootriage.app.schemas.triage import GateOut, GatePage, GateRequest, Pending
from zootriage.app.services import gates as gate_service

router = APIRouter(prefix="/v1/gates", tags=["gates"])


@router.post(
    "",
    status_code=201,
    response_model=GateOut,
    responses={
        202: {"model": Pending, "description": "runs are being computed"},
        **responses(401, 403, 404, 422, 503),
    },
)
def post_gate(
    body: GateRequest,
    session: SessionDep,
    settings: SettingsDep,
    _: WriteAccess,
    project: WorkProject,
    caller: CallerDep,
) -> JSONResponse:
    """Each rule with the candidate's and baseline's values, the change and pass/fail; ``passed`` when
    every rule passes. A metric missing from the candidate fails its rule. In ``?project=`` (default:
    the default project), whose alias a baseline ``{"source": "alias", "name": ...}`` names."""
    answer = gate_service.gate(session, settings, body, project, caller)
    if isinstance(answer, Pending):
        return JSONResponse(answer.model_dump(mode="json"), status_code=202)
    out = gate_service.gate_out(session, answer).model_dump(mode="json")
    return JSONResponse(out, status_code=201, headers={"Location": f"/v1/gates/{answer.id}"})


@router.get("", response_model=GatePage, responses=responses(422))
def get_gates(
    session: SessionDep,
    settings: SettingsDep,
    projects: ListedProjects,
    passed: bool | None = None,
    limit: PageLimit = 50,
    cursor: Cursor = None,
) -> GatePage:
    """Gate decisions, newest first (of ``?project=`` when given, else of every project the key may use)."""
    after = decode_cursor(cursor, CREATED, True) if cursor else None
    size = min(limit, settings.page_size_max)
    items, next_key = gate_service.gate_page(session, size, after, passed, projects)
    return GatePage(
        items=items,
        next_cursor=encode_cursor(next_key, CREATED, True) if next_key else None,
    )


@router.get("/{gate_id}", response_model=GateOut, responses=responses(404, 409, 422))
def get_gate(gate_id: GateId, session: SessionDep, caller: CallerDep) -> GateOut:
    return gate_service.find_gate(session, gate_id, caller)
