"""``/compare?runs=a,b``: runs side by side, differences beyond the noise marked, and a marker scatter.

Each run is compared with the first one named by the comparison service (``app.services.compare``),
so the page highlights exactly what a gate would call a difference.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.api.run_query import MARKER_NAME
from zootriage.app.api_keys import Caller
from zootriage.app.services import short_ids
from zootriage.app.services.compare import compare_runs
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.projects import check_runs_visible
from zootriage.app.ui.plots import marker_scatter
from zootriage.app.ui.session import page_caller
from zootriage.app.ui.templating import render
from zootriage.core.catalogue.markers import list_markers

router = APIRouter()


COMPARE_MAX = 50


def _run_ids(session: Session, caller: Caller | None, text: str) -> list[uuid.UUID]:
    """The runs named, each by its id or a unique prefix of it (``app.services.short_ids``), each in a
    project the caller's key may use (403 otherwise)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or len(parts) > COMPARE_MAX:
        raise ServiceError(422, "invalid_request", f"runs: name 1 to {COMPARE_MAX} run ids, comma-separated")
    found = list(dict.fromkeys(short_ids.resolve_uuid(session, short_ids.RUN, p) for p in parts))
    check_runs_visible(session, caller, found)
    return found


@router.get("/compare", response_class=HTMLResponse)
def compare_page(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    runs: Annotated[str, Query(max_length=COMPARE_MAX * 40)] = "",
    x: Annotated[str, Query(pattern=MARKER_NAME)] = "dimension",
    y: Annotated[str, Query(pattern=MARKER_NAME)] = "utilization",
) -> HTMLResponse:
    names = [spec.name for spec in list_markers()]
    try:
        run_ids = _run_ids(session, page_caller(request, session, settings), runs)
        compared = compare_runs(session, run_ids, (x, y))
    except ServiceError as exc:
        context = {"error": exc, "names": names, "x": x, "y": y, "runs_text": runs}
        return render(request, "compare.html", context, status=exc.status)
    ordered, records = compared.runs, compared.records
    figure, points = marker_scatter(
        [run.architecture or str(run.id)[:8] for run in ordered],
        [f"/runs/{run.id}" for run in ordered],
        [r.estimate(x) for r in records],
        [r.estimate(y) for r in records],
        [r.values.get("id_accuracy") for r in records],
        (x, y, "id_accuracy"),
    )
    context = {
        "runs": ordered,
        "rows": compared.rows,
        "names": names,
        "x": x,
        "y": y,
        "runs_text": runs,
        "figure": figure,
        "points": points,
    }
    return render(request, "compare.html", context)
