"""The runs repository: the history query (filters, sorting by creation time or by any marker, keyset
paging through ``app.db.paging``), a run with its markers, and the markers of many runs at once.

Archived runs (``archived_at`` set) are left out of a history query unless it asks for them
(``Archived``); ``not_archived`` is the one condition every implicit choice of runs (stored-run
recommendations, trends) adds, while a run asked for by id is always found."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, select
from sqlalchemy.orm import Session, aliased

from zootriage.app.db.models import Checkpoint, Job, Marker, Run, RunTag
from zootriage.app.db.paging import CREATED, PageKey, rows_after, split_page
from zootriage.app.db.project_queries import in_projects


class Archived(StrEnum):
    """Which runs a history query lists: the live ones (the default), every one, or the archived only."""

    exclude = "exclude"
    include = "include"
    only = "only"


def not_archived() -> ColumnElement[bool]:
    """The condition of a run that is not archived: what listings and implicit choices of runs use."""
    return Run.archived_at.is_(None)


@dataclass(frozen=True)
class RunFilter:
    architecture: str | None = None
    weights_sha256: str | None = None
    dataset_fingerprint: str | None = None
    marker: str | None = None
    marker_min: float | None = None
    marker_max: float | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    name: str | None = None
    name_contains: str | None = None  # case-insensitive; % and _ are literal
    tags: tuple[tuple[str, str], ...] = ()
    archived: Archived = Archived.exclude
    # Only runs that joined one of these projects, by name (``app.db.project_queries``); None: any.
    projects: tuple[str, ...] | None = None


def _filtered(query: Select[Run, Any], flt: RunFilter) -> Select[Run, Any]:
    if flt.architecture is not None:
        query = query.where(Run.architecture == flt.architecture)
    if flt.weights_sha256 is not None:
        query = query.where(Run.weights_sha256 == flt.weights_sha256)
    if flt.dataset_fingerprint is not None:
        query = query.where(Run.dataset_fingerprint == flt.dataset_fingerprint)
    if flt.created_after is not None:
        query = query.where(Run.created_at >= flt.created_after)
    if flt.created_before is not None:
        query = query.where(Run.created_at < flt.created_before)
    if flt.name is not None:
        query = query.where(Run.name == flt.name)
    if flt.name_contains is not None:
        query = query.where(Run.name.icontains(flt.name_contains, autoescape=True))
    if flt.projects is not None:
        query = query.where(in_projects(flt.projects))
    if flt.archived is Archived.exclude:
        query = query.where(not_archived())
    elif flt.archived is Archived.only:
        query = query.where(Run.archived_at.is_not(None))
    for key, value in flt.tags:  # every tag must hold: one indexed EXISTS each (ix_run_tags_key_value_run_id)
        tagged = aliased(RunTag)
        holds = [tagged.run_id == Run.id, tagged.key == key, tagged.value == value]
        query = query.where(select(tagged.id).where(*holds).exists())
    if flt.marker is not None:
        bound = aliased(Marker)
        conditions = [bound.run_id == Run.id, bound.name == flt.marker, bound.value.is_not(None)]
        if flt.marker_min is not None:
            conditions.append(bound.value >= flt.marker_min)
        if flt.marker_max is not None:
            conditions.append(bound.value <= flt.marker_max)
        query = query.where(select(bound.id).where(*conditions).exists())
    return query


def list_runs(
    session: Session,
    flt: RunFilter,
    *,
    sort: str = CREATED,
    descending: bool = True,
    limit: int,
    after: PageKey | None = None,
) -> tuple[list[Run], PageKey | None]:
    """One page of runs and the key to continue from (``None`` on the last page).

    Sorting by a marker lists only runs where that marker has a value (a NULL has no place in an
    order, and keyset paging over NULLs would skip or repeat rows).
    """
    sorted_by = aliased(Marker)
    key_col: Any = Run.created_at if sort == CREATED else sorted_by.value
    query = select(Run, key_col)
    if sort != CREATED:
        query = query.join(
            sorted_by, and_(sorted_by.run_id == Run.id, sorted_by.name == sort, sorted_by.value.is_not(None))
        )
    query = _filtered(query, flt)
    if after is not None:
        query = query.where(rows_after(key_col, Run.id, after, descending))
    order = (key_col.desc(), Run.id.desc()) if descending else (key_col.asc(), Run.id.asc())
    rows, end = split_page(session.execute(query.order_by(*order).limit(limit + 1)).all(), limit)
    return [row[0] for row in rows], (PageKey(end[1], end[0].id) if end is not None else None)


def marker_values(session: Session, run_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, dict[str, float | None]]:
    """Marker values of the given runs in one query, as plain tuples: building ORM objects for 25
    markers × 50 runs dominated a history page's time."""
    grouped: dict[uuid.UUID, dict[str, float | None]] = {run_id: {} for run_id in run_ids}
    if run_ids:
        query = select(Marker.run_id, Marker.name, Marker.value).where(Marker.run_id.in_(run_ids))
        for run_id, name, value in session.execute(query.order_by(Marker.name)):
            grouped[run_id][name] = value
    return grouped


def marker_values_and_stds(
    session: Session, run_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, dict[str, tuple[float | None, float | None]]]:
    """(value, std) of every marker of the given runs in one query, as plain tuples (the CSV export)."""
    Cells = dict[str, tuple[float | None, float | None]]
    grouped: dict[uuid.UUID, Cells] = {run_id: {} for run_id in run_ids}
    if run_ids:
        query = select(Marker.run_id, Marker.name, Marker.value, Marker.std).where(Marker.run_id.in_(run_ids))
        for run_id, name, value, std in session.execute(query):
            grouped[run_id][name] = (value, std)
    return grouped


def markers_of(session: Session, run_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[Marker]]:
    """Full marker rows (std, applicability, version) of the given runs in one query."""
    grouped: dict[uuid.UUID, list[Marker]] = {run_id: [] for run_id in run_ids}
    if run_ids:
        for marker in session.scalars(select(Marker).where(Marker.run_id.in_(run_ids)).order_by(Marker.name)):
            grouped[marker.run_id].append(marker)
    return grouped


def upload_filenames(session: Session, runs: Sequence[Run]) -> dict[str, str | None]:
    """The client's file names of the uploads these runs scored, by upload id, in one query."""
    ids = {run.weights_sha256 for run in runs if run.model_ref.get("source") == "checkpoint"}
    if not ids:
        return {}
    query = select(Checkpoint.sha256, Checkpoint.filename).where(Checkpoint.sha256.in_(ids))
    return {sha256: filename for sha256, filename in session.execute(query)}


@dataclass(frozen=True)
class RunWithMarkers:
    """A stored run and its marker rows (by name)."""

    run: Run
    markers: list[Marker]

    @property
    def values(self) -> dict[str, float | None]:
        return {marker.name: marker.value for marker in self.markers}


def runs_with_markers(session: Session, run_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, RunWithMarkers]:
    """The stored runs among ``run_ids`` with their markers (two queries in all); ids that name no run
    are absent from the result."""
    runs = list(session.scalars(select(Run).where(Run.id.in_(list(run_ids)))))
    markers = markers_of(session, [run.id for run in runs])
    return {run.id: RunWithMarkers(run, markers[run.id]) for run in runs}


def run_by_id(session: Session, run_id: uuid.UUID) -> Run | None:
    return session.get(Run, run_id)


def run_for_update(session: Session, run_id: uuid.UUID) -> Run | None:
    """The run, its row locked until the transaction ends: two edits of its labels apply one after the
    other, each to what the other left (SQLite, which locks the whole database on write, ignores it)."""
    return session.get(Run, run_id, with_for_update=True)


def set_labels(run: Run, name: str | None, tags: dict[str, str], *, description: str | None) -> None:
    """Give the run this name, description and exactly these tags: kept keys are updated in place and
    only others inserted or deleted, so no flush ever holds one key twice (``uq_run_tags_run_id_key``)."""
    run.name = name
    run.description = description
    kept = [tag for tag in run.tags if tag.key in tags]
    for tag in kept:
        tag.value = tags[tag.key]
    present = {tag.key for tag in kept}
    added = [RunTag(key=key, value=value) for key, value in sorted(tags.items()) if key not in present]
    run.tags = kept + added


def run_with_markers(session: Session, run_id: uuid.UUID) -> RunWithMarkers | None:
    """One stored run with its markers, or None."""
    return runs_with_markers(session, [run_id]).get(run_id)


def latest_job_of(session: Session, run_id: uuid.UUID) -> Job | None:
    """The newest job that produced or found this run (its timings and attempts), or None."""
    return session.scalar(select(Job).where(Job.run_id == run_id).order_by(Job.created_at.desc()).limit(1))


def set_archived(run: Run, when: datetime | None) -> None:
    """Archive the run at ``when`` (kept if it already is: the first archiving is the one recorded), or
    restore it (``None``). Nothing else of the run changes."""
    if when is None or run.archived_at is None:
        run.archived_at = when


def archived_among(session: Session, run_ids: Collection[uuid.UUID | None]) -> dict[uuid.UUID, datetime]:
    """When each archived run among ``run_ids`` was archived (runs not archived, or gone, are absent)."""
    ids = [run_id for run_id in run_ids if run_id is not None]
    if not ids:
        return {}
    query = select(Run.id, Run.archived_at).where(Run.id.in_(ids), Run.archived_at.is_not(None))
    return {run_id: when for run_id, when in session.execute(query) if when is not None}
