"""v1-vs-v2 recommendations for torchvision architectures that ship both ImageNet weights.

``GET /v1/recommendations/{arch}`` reads: the verdict from the two stored runs (200), or 404
``not_scored`` naming what is stored and what is missing; it never queues. ``POST`` on the same path
(write access) queues whatever runs are missing (202 with the jobs) and answers 200 with the verdict
once both are stored. The list computes nothing: it shows the verdicts the stored runs already give.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from zootriage.app.api.cursor import PageLimit
from zootriage.app.api.deps import SessionDep, SettingsDep, WriteAccess
from zootriage.app.api.errors import ApiError, responses
from zootriage.app.api.project_scope import ListedProjects, WorkProject
from zootriage.app.schemas.triage import Pending, Recommendation, RecommendationPage
from zootriage.app.services import recommendations as recommendation_service
from zootriage.app.services import triage as triage_service
from zootriage.core.data.refs import Classes, PerClass, Sampling, Split, parse_dataset_ref
from zootriage.core.protocol import NT, Points, Protocol, Repeats, Seed

router = APIRouter(prefix="/v1/recommendations", tags=["recommendations"])

DATASET_HELP = "dataset reference: builtin:NAME, folder:PATH, torchvision:CLASS:PATH or archive:PATH"


class ScoringQuery(BaseModel):
    """The dataset sample and protocol as query parameters, the same for both weights; each number is
    bounded by the same declaration as in the JSON bodies (``Sampling``, ``core.protocol.Protocol``)."""

    dataset: str = Field(min_length=1, max_length=1100, description=DATASET_HELP)
    classes: Classes = None
    per_class: PerClass = None  # None: points_per_class × repeats, up to each class's size
    split: Split = None
    seed: Seed = 0
    n_t: NT = Protocol().n_t
    points_per_class: Points = 50
    repeats: Repeats = Protocol().repeats


def scoring_query(query: Annotated[ScoringQuery, Query()]) -> triage_service.ScoringPlan:
    fields = {"classes": query.classes, "seed": query.seed, "split": query.split}
    if query.per_class is not None:
        fields["per_class"] = query.per_class
    sampling = Sampling.model_validate(fields)
    protocol = Protocol(
        n_t=query.n_t, seed=query.seed, points_per_class=query.points_per_class, repeats=query.repeats
    )
    sampling = sampling.for_repeats(protocol.points_per_class, protocol.repeats)
    return triage_service.ScoringPlan(parse_dataset_ref(query.dataset), sampling, protocol)


ScoringDep = Annotated[triage_service.ScoringPlan, Depends(scoring_query)]
RuleName = Annotated[
    str | None,
    Query(max_length=64, description="geometry, id_accuracy, logme or a marker name; absent: the default"),
]


@router.get("", response_model=RecommendationPage, responses=responses(403, 404, 422))
def list_recommendations(
    session: SessionDep,
    settings: SettingsDep,
    scoring: ScoringDep,
    projects: ListedProjects,
    limit: PageLimit = 50,
    cursor: Annotated[
        str | None, Query(max_length=64, description="the last architecture of the previous page")
    ] = None,
    rule: RuleName = None,
) -> RecommendationPage:
    """Every torchvision architecture with v1/v2 weights, with the verdict ``rule`` gives on the runs
    stored so far in ``?project=`` (else every project the key may use), or null, and the rule with
    its back-test evidence."""
    chosen = triage_service.triage_rule(rule, verdict=True)
    architectures = sorted(recommendation_service.weight_pairs())
    if cursor is not None:
        if cursor not in architectures:
            raise ApiError(422, "invalid_cursor", f"cursor {cursor!r} is not an architecture of this list")
        architectures = architectures[architectures.index(cursor) + 1 :]
    size = min(limit, settings.page_size_max)
    page = architectures[:size]
    items = recommendation_service.recommendations_so_far(session, scoring, page, chosen, projects)
    return RecommendationPage(
        items=items,
        rule=triage_service.rule_used(chosen, scoring.protocol),
        next_cursor=page[-1] if len(architectures) > size else None,
    )


Arch = Annotated[str, Path(pattern=r"^[A-Za-z0-9_\-]{1,64}$")]


@router.get("/{arch}", response_model=Recommendation, responses=responses(403, 404, 422))
def get_recommendation(
    arch: Arch, session: SessionDep, scoring: ScoringDep, projects: ListedProjects, rule: RuleName = None
) -> Recommendation:
    """v1, v2 or undecided for ``arch`` by ``rule`` beyond the noise, each weights' markers and ImageNet
    acc@1, the ID-accuracy pick beside it, and the back-test evidence for the rule, from the runs
    already stored in ``?project=`` (else every project the key may use); 404 ``not_scored`` (saying
    which weights are missing) until both are. Read-only: ``POST`` on this path queues the missing
    runs, or joins runs stored elsewhere to the key's project."""
    chosen = triage_service.triage_rule(rule, verdict=True)
    return recommendation_service.stored_verdict(session, scoring, arch, chosen, projects)


@router.post(
    "/{arch}",
    response_model=Recommendation,
    responses={
        202: {"model": Pending, "description": "runs are being computed"},
        **responses(401, 403, 404, 422, 503),
    },
)
def post_recommendation(
    arch: Arch,
    session: SessionDep,
    settings: SettingsDep,
    scoring: ScoringDep,
    _: WriteAccess,
    project: WorkProject,
    rule: RuleName = None,
) -> JSONResponse:
    """Queue whatever runs ``arch``'s verdict still needs (202 with the jobs, asking again queues
    nothing new) in ``?project=`` (default: the default project, as for ``POST /v1/jobs``), whose runs
    join it, or, once both are stored, answer 200 with the verdict as ``GET`` does."""
    chosen = triage_service.triage_rule(rule, verdict=True)
    answer = recommendation_service.recommend(session, settings, arch, scoring, chosen, project.id)
    status = 202 if isinstance(answer, Pending) else 200
    return JSONResponse(answer.model_dump(mode="json"), status_code=status)
