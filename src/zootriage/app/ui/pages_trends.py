"""``/trends``: the chosen markers across a project's runs (or an alias's moves), each point with its
band ±1 standard error and a link to its run, and each marker's drift verdict, through the service
behind ``GET /v1/trends`` (``app.services.trends``) and its query (``app.api.trends.TrendQuery``)."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.api.trends import TrendQueryDep
from zootriage.app.schemas.trends import TrendsOut
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.projects import list_projects
from zootriage.app.services.trends import MARKERS_MAX, POINTS_MAX, SYMBOLS
from zootriage.app.ui.plots import TrendPanel, marker_trends
from zootriage.app.ui.session import page_caller
from zootriage.app.ui.templating import render
from zootriage.core.catalogue.markers import list_markers
from zootriage.core.noise import Estimate

router = APIRouter()

TICK_CHARS = 18


def _figure(answer: TrendsOut) -> tuple[str, int]:
    """The answer's series as one panel each over the selected runs, titled with the drift verdict."""
    ticks = [""] * answer.runs
    panels = []
    for series in answer.series:
        for point in series.points:
            ticks[point.index] = f"{point.label[:TICK_CHARS]} · {point.at:%Y-%m-%d}"
        panels.append(
            TrendPanel(
                marker=series.marker,
                positions=[p.index for p in series.points],
                # The service's own standard errors (the plot reads value and se alone, not df).
                estimates=[Estimate(p.value, p.se, math.inf) for p in series.points],
                links=[f"/runs/{p.run_id}" for p in series.points],
                title=f"{series.marker} ({series.description}): {series.drift.verdict.replace('_', ' ')}",
            )
        )
    return marker_trends(ticks, panels)


@router.get("/trends", response_class=HTMLResponse)
def trends_page(
    request: Request, session: SessionDep, settings: SettingsDep, query: TrendQueryDep
) -> HTMLResponse:
    form = {
        "project": query.project or "",
        "alias": query.alias or "",
        "arch": query.arch or "",
        "name_contains": query.name_contains or "",
        "dataset": query.dataset or "",
        "since": query.since or "",
        "limit": query.limit,
    }
    context: dict[str, Any] = {
        "form": form,
        "tags": query.tags,
        "names": [spec.name for spec in list_markers()],
        "symbols": {registry: symbol for symbol, registry in SYMBOLS.items()},
        "asked": query.markers,
        "chosen": [SYMBOLS.get(name, name) for name in query.markers],
        "markers_max": MARKERS_MAX,
        "points_max": POINTS_MAX,
        "projects": [],
    }
    try:
        caller = page_caller(request, session, settings)
        context["projects"] = [p.name for p in list_projects(session, caller)]
        answer = query.answer(session, caller)
    except ServiceError as exc:
        return render(request, "trends.html", {**context, "error": exc}, status=exc.status)
    figure, points = _figure(answer)
    context.update(answer=answer, figure=figure, points=points)
    return render(request, "trends.html", context)
