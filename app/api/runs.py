"""The run history: browse, filter, sort by any marker, page with a cursor, export as CSV."""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Iterator, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.api.cursor import Cursor, PageLimit, decode_cursor, encode_cursor
from app.api.deps import SessionDep, SettingsDep
from app.api.errors import ApiError, responses
from app.db.models import Marker, Run
from app.db.run_queries import CREATED, PageKey, RunFilter, list_runs, marker_values, upload_filenames
from app.db.session import get_sessionmaker
from app.labels import BadLabel, parse_tag, run_label, warnings_of
from app.schemas.runs import MarkerOut, RunDetail, RunPage, RunSummary
from core.markers import list_markers

router = APIRouter(prefix="/v1/runs", tags=["runs"])

CSV_BATCH = 500
MARKER_NAME = r"^[A-Za-z0-9_.\-]{1,64}$"


class Order(StrEnum):
    asc = "asc"
    desc = "desc"


class Format(StrEnum):
    json = "json"
    csv = "csv"


def _identity(run: Run, filenames: Mapping[str, str | None]) -> dict[str, Any]:
    """The fields a run's summary and its detail share."""
    return {
        "id": run.id,
        "run_key": run.run_key,
        "created_at": run.created_at,
        "label": run_label(run, filenames),
        "name": run.name,
        "tags": run.tag_map,
        "warnings": warnings_of(run.model_meta),
        "architecture": run.architecture,
        "weights_sha256": run.weights_sha256,
        "dataset_fingerprint": run.dataset_fingerprint,
        "model": run.model_ref,
        "dataset": run.dataset_ref,
    }


def _summary(run: Run, markers: dict[str, float | None], filenames: Mapping[str, str | None]) -> RunSummary:
    return RunSummary(**_identity(run, filenames), markers=markers)


def _tag_filter(tags: list[str]) -> tuple[tuple[str, str], ...]:
    try:
        return tuple(parse_tag(text) for text in tags)
    except BadLabel as exc:
        raise ApiError(422, "invalid_request", f"tag filter: {exc}") from None


def known_marker(name: str, what: str) -> str:
    known = {spec.name for spec in list_markers()}
    if name not in known:
        raise ApiError(422, "unknown_marker", f"{what} {name!r} is not a marker; known: {sorted(known)}")
    return name


def history_filter(flt: RunFilter, sort: str) -> RunFilter:
    """The filter, checked once for the API and the pages: bounds need a marker, names must be markers."""
    if (flt.marker_min is not None or flt.marker_max is not None) and flt.marker is None:
        raise ApiError(422, "invalid_request", "min/max need a marker to apply to")
    if flt.marker is not None:
        known_marker(flt.marker, "marker")
    if sort != CREATED:
        known_marker(sort, "sort")
    return flt


def csv_rows(database_url: str, flt: RunFilter, sort: str, descending: bool) -> Iterator[str]:
    """Stream the whole filtered history in batches, one short transaction per batch."""
    names = [spec.name for spec in list_markers()]
    identity = ["id", "created_at", "name", "tags", "architecture", "weights_sha256", "dataset_fingerprint"]
    head = [*identity, "run_key", *names]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(head)
    after: PageKey | None = None
    while True:
        with get_sessionmaker(database_url)() as session:
            page, after = list_runs(
                session, flt, sort=sort, descending=descending, limit=CSV_BATCH, after=after
            )
            markers = marker_values(session, [run.id for run in page])
        for run in page:
            values = markers[run.id]
            tags = ",".join(f"{key}={value}" for key, value in run.tag_map.items())
            base = [run.id, run.created_at.isoformat(), run.name or "", tags, run.architecture or ""]
            content = [run.weights_sha256, run.dataset_fingerprint, run.run_key]
            writer.writerow([*base, *content, *(values.get(n, "") for n in names)])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        if after is None:
            return


@router.get(
    "",
    response_model=RunPage,
    responses={**responses(422), 200: {"content": {"text/csv": {}}}},
)
def get_runs(
    session: SessionDep,
    settings: SettingsDep,
    architecture: str | None = None,
    name: Annotated[str | None, Query(max_length=128, description="runs with exactly this name")] = None,
    tag: Annotated[
        list[str] | None,
        Query(max_length=16, description="key=value; repeat for several, every one must hold"),
    ] = None,
    weights: Annotated[str | None, Query(description="weights sha256")] = None,
    dataset: Annotated[str | None, Query(description="dataset fingerprint")] = None,
    marker: Annotated[str | None, Query(pattern=MARKER_NAME, description="filter on this marker")] = None,
    marker_min: Annotated[
        float | None, Query(alias="min", description="marker lower bound, inclusive")
    ] = None,
    marker_max: Annotated[
        float | None, Query(alias="max", description="marker upper bound, inclusive")
    ] = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    sort: Annotated[str, Query(pattern=MARKER_NAME, description="'created_at' or a marker name")] = CREATED,
    order: Order = Order.desc,
    limit: PageLimit = 50,
    cursor: Cursor = None,
    output: Annotated[Format, Query(alias="format")] = Format.json,
) -> RunPage | StreamingResponse:
    flt = RunFilter(
        architecture, weights, dataset, marker, marker_min, marker_max, created_after, created_before, name,
        _tag_filter(tag or []),
    )
    flt = history_filter(flt, sort)
    descending = order is Order.desc
    if output is Format.csv:
        rows = csv_rows(settings.effective_database_url, flt, sort, descending)
        headers = {"Content-Disposition": 'attachment; filename="runs.csv"'}
        return StreamingResponse(rows, media_type="text/csv", headers=headers)
    after = decode_cursor(cursor, sort, descending) if cursor else None
    size = min(limit, settings.page_size_max)
    page, next_key = list_runs(session, flt, sort=sort, descending=descending, limit=size, after=after)
    markers = marker_values(session, [run.id for run in page])
    filenames = upload_filenames(session, page)
    return RunPage(
        items=[_summary(run, markers[run.id], filenames) for run in page],
        next_cursor=encode_cursor(next_key, sort, descending) if next_key else None,
    )


@router.get("/{run_id}", response_model=RunDetail, responses=responses(404, 422))
def get_run(run_id: uuid.UUID, session: SessionDep) -> RunDetail:
    run = session.get(Run, run_id)
    if run is None:
        raise ApiError(404, "run_not_found", f"no run {run_id}")
    return run_detail(session, run)


def run_detail(session: Session, run: Run) -> RunDetail:
    markers = session.scalars(select(Marker).where(Marker.run_id == run.id).order_by(Marker.name)).all()
    return RunDetail(
        **_identity(run, upload_filenames(session, [run])),
        sampling=run.sampling,
        protocol=run.protocol,
        model_meta=run.model_meta,
        code_version=run.code_version,
        device=run.device,
        n_images=run.n_images,
        timings=run.timings,
        markers=[MarkerOut.model_validate(m) for m in markers],
    )
