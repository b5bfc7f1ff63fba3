"""A run's artifacts: its extracted features (``/features``) and its self-contained report
(``/report``), by the run's id or a unique prefix of it. Checked like every other run route: the read
scope (the router is included with ``ReadAccess``), and a key limited to projects sees only their runs
(``VisibleRunId``: 403 otherwise)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, StreamingResponse

from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.api.errors import responses
from zootriage.app.api.project_scope import VisibleRunId
from zootriage.app.schemas.reports import RunReport
from zootriage.app.services.artifacts import Download, FeatureFormat, features_download, run_report

router = APIRouter(prefix="/v1/runs", tags=["runs"])


class ReportFormat(StrEnum):
    json = "json"
    html = "html"


def streamed(download: Download, disposition: str = "attachment") -> StreamingResponse:
    """A ``Download`` as a streamed answer, with its file name (and length, when known)."""
    headers = {"Content-Disposition": f'{disposition}; filename="{download.filename}"'}
    if download.length is not None:
        headers["Content-Length"] = str(download.length)
    return StreamingResponse(download.pieces, media_type=download.media_type, headers=headers)


def html_report(report: RunReport) -> HTMLResponse:
    """The report as its one HTML file, shown in the browser, saved under the run's short id."""
    from zootriage.app.ui.report_html import report_html  # matplotlib, on request

    disposition = f'inline; filename="run-{report.short_id}-report.html"'
    return HTMLResponse(report_html(report), headers={"Content-Disposition": disposition})


@router.get(
    "/{run_id}/features",
    response_class=StreamingResponse,
    responses={
        **responses(401, 403, 404, 409, 422, 503),
        200: {"content": {"application/octet-stream": {}, "application/zip": {}}},
    },
)
def get_features(
    run_id: VisibleRunId,
    session: SessionDep,
    settings: SettingsDep,
    output: Annotated[FeatureFormat, Query(alias="format")] = FeatureFormat.safetensors,
) -> StreamingResponse:
    """The run's extracted features, logits and labels, streamed from the feature cache:
    ``safetensors`` (re-encoded on the fly in 1 MiB pieces, the run's identity and the model's
    description in its metadata) or ``npz`` (the cached file as stored). 404 ``features_gone`` when the
    cache no longer holds them; its message says how to compute them again."""
    return streamed(features_download(session, settings, run_id, output))


@router.get(
    "/{run_id}/report",
    response_model=RunReport,
    responses={**responses(401, 403, 404, 409, 422), 200: {"content": {"text/html": {}}}},
)
def get_report(
    run_id: VisibleRunId,
    session: SessionDep,
    output: Annotated[ReportFormat, Query(alias="format")] = ReportFormat.json,
) -> RunReport | HTMLResponse:
    """Everything about the run in one document: every marker with its value, std, se and 95% interval,
    the protocol and sampling, model and dataset with their hashes, code version, device, timings and
    the job that computed it. ``html``: one file with no external reference (inline CSS and SVG)."""
    report = run_report(session, run_id)
    if output is ReportFormat.json:
        return report
    return html_report(report)
