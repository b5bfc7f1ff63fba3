"""The run page's downloads, behind the pages' login (``PageRead``) as ``/runs.csv`` is: the report
(``/runs/{id}/report.html``) and the features (``/runs/{id}/features.safetensors`` or ``.npz``),
the same services as ``GET /v1/runs/{id}/report`` and ``/features``, for a login that may see the run
(a key limited to projects: only their runs)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from zootriage.app.api.artifacts import html_report, streamed
from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.services.artifacts import FeatureFormat, features_download, run_report
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.projects import check_run_visible
from zootriage.app.ui.session import page_caller
from zootriage.app.ui.templating import render

router = APIRouter()


def _check_visible(request: Request, session: SessionDep, settings: SettingsDep, run_id: uuid.UUID) -> None:
    check_run_visible(session, page_caller(request, session, settings), run_id)


@router.get("/runs/{run_id}/report.html", response_class=HTMLResponse)
def report_page(
    request: Request, run_id: uuid.UUID, session: SessionDep, settings: SettingsDep
) -> HTMLResponse:
    try:
        _check_visible(request, session, settings, run_id)
        report = run_report(session, run_id)
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    return html_report(report)


@router.get("/runs/{run_id}/features.{output}")
def features_file(
    request: Request, run_id: uuid.UUID, output: FeatureFormat, session: SessionDep, settings: SettingsDep
) -> Response:
    try:
        _check_visible(request, session, settings, run_id)
        return streamed(features_download(session, settings, run_id, output))
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
