"""The run history: one filter check for the API and the pages, pages of runs, one run in full, CSV.

Routers parse the query; this module checks what the query means (a bound needs a marker, names must
be markers), asks the runs repository (``app.db.run_queries``) and builds the answers from the rows
through the schemas (``app.schemas.runs``).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from zootriage.app.csv_cells import csv_writer
from zootriage.app.db.models import Job, Marker, Run
from zootriage.app.db.paging import CREATED, PageKey
from zootriage.app.db.run_queries import (
    RunFilter,
    latest_job_of,
    list_runs,
    marker_values,
    marker_values_and_stds,
    run_for_update,
    run_with_markers,
    set_archived,
    set_labels,
    upload_filenames,
)
from zootriage.app.db.session import get_sessionmaker
from zootriage.app.labels import MAX_TAGS, BadLabel, parse_tag
from zootriage.app.schemas.runs import RunDetail, RunLabels, RunSummary
from zootriage.app.services.errors import ServiceError
from zootriage.core.catalogue.markers import list_markers
from zootriage.core.data.refs import dataset_text

CSV_BATCH = 500


def tag_filter(tags: list[str]) -> tuple[tuple[str, str], ...]:
    """``key=value`` texts as the filter's pairs; 422 for one that is no tag."""
    try:
        return tuple(parse_tag(text) for text in tags)
    except BadLabel as exc:
        raise ServiceError(422, "invalid_request", f"tag filter: {exc}") from None


def known_marker(name: str, what: str) -> str:
    known = {spec.name for spec in list_markers()}
    if name not in known:
        raise ServiceError(422, "unknown_marker", f"{what} {name!r} is not a marker; known: {sorted(known)}")
    return name


def history_filter(flt: RunFilter, sort: str) -> RunFilter:
    """The filter, checked once for the API and the pages: bounds need a marker, names must be markers."""
    if (flt.marker_min is not None or flt.marker_max is not None) and flt.marker is None:
        raise ServiceError(422, "invalid_request", "min/max need a marker to apply to")
    if flt.marker is not None:
        known_marker(flt.marker, "marker")
    if sort != CREATED:
        known_marker(sort, "sort")
    return flt


def history_page(
    session: Session, flt: RunFilter, sort: str, descending: bool, limit: int, after: PageKey | None
) -> tuple[list[RunSummary], PageKey | None]:
    """One page of the history as summaries (each with its marker values), and where the next begins."""
    page, next_key = list_runs(session, flt, sort=sort, descending=descending, limit=limit, after=after)
    context = {"filenames": upload_filenames(session, page)}
    markers = marker_values(session, [run.id for run in page])
    summaries = [
        RunSummary.model_validate(run, context={**context, "markers": markers[run.id]}) for run in page
    ]
    return summaries, next_key


def run_detail(session: Session, run_id: uuid.UUID) -> RunDetail:
    """One run in full, every marker with its noise; 404 ``run_not_found``."""
    found = run_with_markers(session, run_id)
    if found is None:
        raise ServiceError(404, "run_not_found", f"no run {run_id}")
    context = {"filenames": upload_filenames(session, [found.run]), "markers": found.markers}
    return RunDetail.model_validate(found.run, context=context)


def relabel(
    session: Session, run_id: uuid.UUID, labels: RunLabels, *, replace_tags: bool = False
) -> RunDetail:
    """Apply a merge patch of the run's name, description and tags (``RunLabels``) and commit; the run
    in full. ``replace_tags``: the patch's tags are the whole new set (a form that shows every tag),
    not changes.
    404 ``run_not_found``; 422 ``too_many_tags`` when the tags it would carry are over the limit."""
    run = run_for_update(session, run_id)
    if run is None:
        raise ServiceError(404, "run_not_found", f"no run {run_id}")
    given = labels.model_fields_set
    name = labels.name if "name" in given else run.name
    description = labels.description if "description" in given else run.description
    tags = {} if replace_tags else run.tag_map
    for key, value in labels.tags.items():
        if value is None:
            tags.pop(key, None)
        else:
            tags[key] = value
    if len(tags) > MAX_TAGS:
        session.rollback()
        raise ServiceError(
            422,
            "too_many_tags",
            f"a run carries at most {MAX_TAGS} tags; this would give it {len(tags)}: remove some with null",
        )
    set_labels(run, name, tags, description=description)
    session.commit()
    return run_detail(session, run_id)


def set_archived_state(session: Session, run_id: uuid.UUID, archived: bool) -> RunDetail:
    """Archive the run (``archived``) or restore it, commit, and answer the run in full. Nothing is
    deleted: an archived run leaves the default history, the stored-run recommendations and the
    trends, and is still found by id, in ``?archived=include|only`` and by the gates and rankings that
    name it. Both are idempotent (archiving again keeps the first ``archived_at``). 404 ``run_not_found``."""
    run = run_for_update(session, run_id)
    if run is None:
        raise ServiceError(404, "run_not_found", f"no run {run_id}")
    set_archived(run, datetime.now(UTC) if archived else None)
    session.commit()
    return run_detail(session, run_id)


@dataclass(frozen=True)
class RunPage:
    """What the run's page shows: the row, its markers, and the newest job that produced or found it."""

    run: Run
    markers: list[Marker]
    job: Job | None


def run_page_parts(session: Session, run_id: uuid.UUID) -> RunPage:
    """One run for its page; 404 ``run_not_found``."""
    found = run_with_markers(session, run_id)
    if found is None:
        raise ServiceError(404, "run_not_found", f"no run {run_id}")
    return RunPage(found.run, found.markers, latest_job_of(session, run_id))


def _cell(number: float | None) -> float | str:
    """A marker's value or std as a CSV cell: empty when there is none (no value, no noise estimate)."""
    return "" if number is None else number


def csv_rows(database_url: str, flt: RunFilter, sort: str, descending: bool) -> Iterator[str]:
    """Stream the whole filtered history in batches, one short transaction per batch."""
    names = [spec.name for spec in list_markers()]
    identity = ["id", "created_at", "name", "tags", "architecture", "weights_sha256"]
    head = [*identity, "dataset", "dataset_fingerprint", "run_key"]
    head += [column for name in names for column in (name, f"{name}_std")]  # each value, then its noise
    buffer = io.StringIO()
    writer = csv_writer(buffer)  # user text is neutralised for spreadsheets
    writer.writerow(head)
    after: PageKey | None = None
    while True:
        with get_sessionmaker(database_url)() as session:
            page, after = list_runs(
                session, flt, sort=sort, descending=descending, limit=CSV_BATCH, after=after
            )
            markers = marker_values_and_stds(session, [run.id for run in page])
        for run in page:
            cells = markers[run.id]
            tags = ",".join(f"{key}={value}" for key, value in run.tag_map.items())
            base = [run.id, run.created_at.isoformat(), run.name or "", tags, run.architecture or ""]
            dataset = dataset_text(run.dataset_ref)
            content = [run.weights_sha256, dataset, run.dataset_fingerprint, run.run_key]
            noisy = [_cell(part) for n in names for part in cells.get(n, (None, None))]
            writer.writerow([*base, *content, *noisy])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        if after is None:
            return
