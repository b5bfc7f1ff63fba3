"""``POST /v1/rankings``: any set of candidate weights ranked by the paper's rule on one dataset.

Candidates may mix torchvision, timm and uploaded checkpoints; each is scored once (or found scored)
under the request's sampling and protocol. 202 with the jobs while any run is missing, then 200.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from zootriage.app.api.deps import SessionDep, SettingsDep, WriteAccess
from zootriage.app.api.errors import responses
from zootriage.app.api.project_scope import WorkProject
from zootriage.app.schemas.triage import Pending, RankingOut, RankingRequest
from zootriage.app.services import rankings as ranking_service

router = APIRouter(prefix="/v1/rankings", tags=["rankings"])


@router.post(
    "",
    response_model=RankingOut,
    responses={
        202: {"model": Pending, "description": "runs are being computed"},
        **responses(401, 403, 404, 422, 503),
    },
)
def post_ranking(
    body: RankingRequest, session: SessionDep, settings: SettingsDep, _: WriteAccess, project: WorkProject
) -> JSONResponse:
    """Geometry order (Pareto on dimension and utilization, ties broken by their product) beside the
    ID-accuracy and LogME orders, with the pairs where they disagree; the candidates' runs join
    ``?project=`` (default: the default project)."""
    answer = ranking_service.ranking(session, settings, body, project.id)
    status = 202 if isinstance(answer, Pending) else 200
    return JSONResponse(answer.model_dump(mode="json"), status_code=status)
