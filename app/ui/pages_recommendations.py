"""``/recommendations``: the v1-vs-v2 pairs with the verdict their stored runs already give, if any.

The same service call as GET /v1/recommendations (``recommendations_so_far``): it computes nothing and
queues nothing, so a page view never starts work.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from zootriage.app.api.deps import SessionDep
from zootriage.app.api.recommendations import ScoringQuery, scoring_query
from zootriage.app.services import recommendations as recommendation_service
from zootriage.app.services import triage as triage_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.ui.templating import render
from zootriage.core.errors import ZooError

router = APIRouter()
FIELDS = tuple(ScoringQuery.model_fields)


@router.get("/recommendations", response_class=HTMLResponse)
def recommendations_page(request: Request, session: SessionDep) -> HTMLResponse:
    asked = {k: v for k, v in request.query_params.items() if k in FIELDS and v.strip()}
    count = len(recommendation_service.weight_pairs())
    context = {"asked": asked, "items": None, "error": None, "count": count}
    if "dataset" not in asked:
        return render(request, "recommendations.html", context)
    try:
        scoring = scoring_query(ScoringQuery.model_validate(asked))
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        error = ServiceError(422, "invalid_request", where)
        return render(request, "recommendations.html", {**context, "error": error}, status=422)
    except ZooError as exc:
        error = ServiceError(exc.http_status, exc.code, exc.message)
        return render(request, "recommendations.html", {**context, "error": error}, status=exc.http_status)
    rule = triage_service.triage_rule("geometry")
    items = recommendation_service.recommendations_so_far(
        session, scoring, sorted(recommendation_service.weight_pairs()), rule
    )
    used = triage_service.rule_used(rule, scoring.protocol)
    return render(request, "recommendations.html", {**context, "items": items, "rule": used})
