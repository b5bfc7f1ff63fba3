"""Runs side by side: each run's markers against the first run's, marker by marker, through
``MarkerRecord.estimate`` and ``core.noise.compare`` (the Welch test the verdicts use). Every marker
carries its noise (its std over the repeats' subsets, ``core.markers.compute``); a marker stored
without one is shown with "no noise estimate" and never highlighted."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.orm import Session

from zootriage.app.db.models import Run
from zootriage.app.db.run_queries import runs_with_markers
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.runs import known_marker
from zootriage.app.services.triage import record_of
from zootriage.core.catalogue.markers import list_markers
from zootriage.core.noise import Estimate, compare
from zootriage.core.triage import MarkerRecord


@dataclass(frozen=True)
class Cell:
    """One marker of one run: its value with noise, and whether it differs from the first run's
    beyond the noise (``reason`` says why or why not)."""

    estimate: Estimate | None
    std: float | None
    beyond_noise: bool
    reason: str


@dataclass(frozen=True)
class MarkerRow:
    name: str
    cells: list[Cell]


@dataclass(frozen=True)
class RunsCompared:
    runs: list[Run]
    records: list[MarkerRecord]
    rows: list[MarkerRow]


def _cell(base: Estimate | None, first: MarkerRecord, record: MarkerRecord, name: str) -> Cell:
    """``record``'s value of ``name`` against the first run's (``base``): beyond the noise only where
    the test says so and neither run's value is one that may not decide (a degenerate GLUE regime,
    draws-only repeats), as in the verdicts."""
    estimate = record.estimate(name)
    diff = compare(base, estimate) if base is not None and estimate is not None else None
    barred = first.undecidable.get(name) or record.undecidable.get(name)
    beyond = bool(diff and diff.significant) and not barred
    reason = f"{diff.reason()}; not decidable: {barred}" if diff and barred else diff.reason() if diff else ""
    return Cell(estimate, record.stds.get(name), beyond, reason)


def compare_runs(session: Session, run_ids: list[uuid.UUID], axes: tuple[str, str]) -> RunsCompared:
    """Every marker of the named runs (in the order named) against the first; the two ``axes`` must be
    markers. 404 ``run_not_found`` naming every id that is no run."""
    for what, name in zip(("x", "y"), axes, strict=True):
        known_marker(name, what)
    found = runs_with_markers(session, run_ids)
    missing = [str(i) for i in run_ids if i not in found]
    if missing:
        raise ServiceError(404, "run_not_found", f"no run {', '.join(missing)}")
    records = [record_of(str(i), found[i].run, found[i].markers) for i in run_ids]
    rows = []
    for spec in list_markers():
        base = records[0].estimate(spec.name)
        rows.append(MarkerRow(spec.name, [_cell(base, records[0], record, spec.name) for record in records]))
    return RunsCompared([found[i].run for i in run_ids], records, rows)
