"""``/recommendations`` and ``/recommendations/{arch}``: the v1-vs-v2 pairs, and one pair's verdict in
full, from the runs already stored.

The index is the same service call as GET /v1/recommendations (``recommendations_so_far``); the
architecture's page asks ``stored_recommendation``, which builds the same ``Recommendation`` as
GET /v1/recommendations/{arch} from the stored runs. Neither computes a marker or queues a job, so a
page view never starts work. The page's "Score the missing runs" form posts (with its CSRF token) to
``POST /recommendations/{arch}``, which needs write access and queues them through the same service
call as POST /v1/recommendations/{arch} (``recommend``), then shows the page again (303). The form's
``project`` (a select of the projects the key may use, ``default`` first chosen) is that call's
``?project=``: checked the same way (403, 404, 422), a refusal shown on the page. Both pages read
the runs of every project the key may use, as the API does without ``?project=``.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.api.recommendations import ScoringQuery, scoring_query
from zootriage.app.project_names import SLUG_CHARS
from zootriage.app.schemas.triage import Pending
from zootriage.app.services import projects as project_service
from zootriage.app.services import recommendations as recommendation_service
from zootriage.app.services import triage as triage_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.triage import ScoringPlan
from zootriage.app.ui.session import check_write, page_caller
from zootriage.app.ui.templating import render
from zootriage.core.errors import ZooError

router = APIRouter()
FIELDS = tuple(ScoringQuery.model_fields)
ARCH = r"^[A-Za-z0-9_\-]{1,64}$"
DEFAULT_PROJECT = "default"


def _project_asked(text: str | None) -> str | None:
    """The form's project, None when blank (the default project); at most a slug's length is kept, so a
    longer name is refused as malformed rather than echoed whole."""
    chosen = (text or "").strip()[: SLUG_CHARS + 1]
    return chosen or None


def _asked(request: Request) -> dict[str, str]:
    return {k: v for k, v in request.query_params.items() if k in FIELDS and v.strip()}


def _scoring(asked: dict[str, str]) -> ScoringPlan:
    """The dataset sample and protocol from the form, checked as the API checks its query; 4xx
    ``ServiceError`` naming the field otherwise."""
    try:
        return scoring_query(ScoringQuery.model_validate(asked))
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise ServiceError(422, "invalid_request", where) from None
    except ZooError as exc:
        raise ServiceError(exc.http_status, exc.code, exc.message) from None


@router.get("/recommendations", response_class=HTMLResponse)
def recommendations_page(request: Request, session: SessionDep, settings: SettingsDep) -> HTMLResponse:
    asked = _asked(request)
    architectures = sorted(recommendation_service.weight_pairs())
    context = {
        "asked": asked,
        "items": None,
        "error": None,
        "count": len(architectures),
        "query": urlencode(asked),
        "architectures": architectures,
    }
    if "dataset" not in asked:
        return render(request, "recommendations.html", context)
    try:
        scoring = _scoring(asked)
    except ServiceError as exc:
        return render(request, "recommendations.html", {**context, "error": exc}, status=exc.status)
    rule = triage_service.triage_rule(None, verdict=True)
    projects = project_service.visible_project_ids(session, page_caller(request, session, settings), None)
    items = recommendation_service.recommendations_so_far(session, scoring, architectures, rule, projects)
    used = triage_service.rule_used(rule, scoring.protocol)
    return render(request, "recommendations.html", {**context, "items": items, "rule": used})


@router.get("/recommendations/{arch}", response_class=HTMLResponse)
def recommendation_page(
    request: Request, session: SessionDep, settings: SettingsDep, arch: Annotated[str, Path(pattern=ARCH)]
) -> HTMLResponse:
    asked = _asked(request)
    rule_name = request.query_params.get("rule", "").strip() or None
    queued = request.query_params.get("queued", "")
    count = int(queued) if queued.isdigit() and len(queued) < 6 else None
    project = _project_asked(request.query_params.get("project"))
    return _recommendation_page(request, session, settings, arch, asked, rule_name, count, project=project)


@router.post("/recommendations/{arch}", response_class=HTMLResponse)
async def queue_recommendation(
    request: Request, session: SessionDep, settings: SettingsDep, arch: Annotated[str, Path(pattern=ARCH)]
) -> Response:
    """Queue the runs the verdict still needs, then back to the page (303) saying how many jobs are
    computing them; the page with the refusal otherwise."""
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    asked = {k: v for k, v in form.items() if k in FIELDS and v.strip()}
    rule_name = form.get("rule", "").strip() or None
    project_name = _project_asked(form.get("project"))
    refused: ServiceError
    try:
        check_write(request, session, settings, form.get("csrf"))
        if rule_name is not None and len(rule_name) > 64:
            raise ServiceError(422, "invalid_request", "rule: at most 64 characters")
        scoring = _scoring(asked)
        rule = triage_service.triage_rule(rule_name, verdict=True)
        project = project_service.project_for(session, page_caller(request, session, settings), project_name)
        answer = recommendation_service.recommend(session, settings, arch, scoring, rule, project.id)
    except ZooError as exc:
        refused = ServiceError(exc.http_status, exc.code, exc.message)
    except ServiceError as exc:
        refused = exc
    else:
        query = {**asked, **({"rule": rule_name} if rule_name else {})}
        if project_name is not None and project_name != DEFAULT_PROJECT:
            query["project"] = project_name
        if isinstance(answer, Pending):
            query["queued"] = str(len(answer.jobs))
        return RedirectResponse(f"/recommendations/{arch}?{urlencode(query)}", status_code=303)
    return _recommendation_page(
        request, session, settings, arch, asked, rule_name, None, refused, project=project_name
    )


def _recommendation_page(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    arch: str,
    asked: dict[str, str],
    rule_name: str | None,
    queued: int | None,
    refused: ServiceError | None = None,
    *,
    project: str | None = None,
) -> HTMLResponse:
    """The architecture's page: its pair, and with a dataset asked, the verdict from the stored runs;
    ``queued`` jobs just queued by the form, or the form's refusal shown beside it. The queue form's
    project select lists the projects the key may use, ``project`` (else ``default``) chosen."""
    context: dict[str, Any] = {
        "arch": arch,
        "asked": asked,
        "rule_name": rule_name,
        "error": refused,
        "shown": None,
        "queued": queued,
        "project": project or DEFAULT_PROJECT,
        "projects": [],
    }
    status = refused.status if refused else 200
    try:
        pair = recommendation_service.pair_of(arch)
    except ZooError as exc:
        error = ServiceError(exc.http_status, exc.code, exc.message)
        return render(request, "error.html", {"error": error}, status=exc.http_status)
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    context["pair"] = pair
    caller = page_caller(request, session, settings)
    context["projects"] = [p.name for p in project_service.list_projects(session, caller)]
    if "dataset" not in asked:
        return render(request, "recommendation.html", context, status=status)
    try:
        if rule_name is not None and len(rule_name) > 64:
            raise ServiceError(422, "invalid_request", "rule: at most 64 characters")
        scoring = _scoring(asked)
        rule = triage_service.triage_rule(rule_name, verdict=True)
    except ServiceError as exc:
        return render(request, "recommendation.html", {**context, "error": exc}, status=exc.status)
    projects = project_service.visible_project_ids(session, caller, None)
    shown = recommendation_service.stored_recommendation(session, scoring, arch, rule, projects)
    used = triage_service.rule_used(rule, scoring.protocol)
    return render(request, "recommendation.html", {**context, "shown": shown, "rule": used}, status=status)
