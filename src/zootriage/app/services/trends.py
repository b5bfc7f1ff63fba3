"""Trends: is a marker drifting across a project's releases?

A trend follows a selection of runs in time (``select_runs``, the one place that decides which runs
and in which order: the runs matching the history's filters by creation time, or, along an alias's
history, the runs it pointed to in the order of its moves) and, per marker, gives each run's value
with its noise and one drift verdict.

Each point is the run's value with its standard error, read exactly as every triage answer reads a
stored run (``app.services.triage.record_of``, ``core.triage.MarkerRecord.estimate``): se = s/√R for a
std s over R repeats, None without a noise estimate. The pages draw value ± se around each point, the
band the compare page's error bars use.

Drift compares the last point with the first by ``core.noise.compare``, the two-sided Welch t-test the
compare page and the verdicts use, at α = ``core.noise.ALPHA``:

    d = m_last − m_first,   se_d = √(se_first² + se_last²),
    drift  ⇔  |d| > c · se_d,   c = t⁻¹_ν(1 − α/2)   (ν the Welch–Satterthwaite df; c → z = 1.96 as ν → ∞),

equivalently p = 2 · P(T_ν > |d|/se_d) < α. A verdict needs two points, both with a noise estimate and
both from a regime where the marker may decide (``decidable``); otherwise it is "cannot decide" and
says which point lacks what. Intermediate points are shown, not tested: comparing every step would
call a drift in one test out of twenty by chance alone.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session

from zootriage.app.api_keys import Caller
from zootriage.app.db import project_queries
from zootriage.app.db.models import Marker, Run
from zootriage.app.db.run_queries import (
    RunFilter,
    list_runs,
    markers_of,
    runs_with_markers,
    upload_filenames,
)
from zootriage.app.labels import run_label
from zootriage.app.project_names import BadSlug, check_alias_name
from zootriage.app.schemas.trends import (
    Direction,
    Drift,
    TrendPoint,
    TrendSelection,
    TrendSeries,
    TrendsOut,
    Verdict,
)
from zootriage.app.services import projects as project_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.triage import record_of
from zootriage.core.catalogue.markers import MarkerInfo, get_marker, list_markers
from zootriage.core.noise import (
    ALPHA,
    NO_NOISE_ESTIMATE,
    TEST,
    Estimate,
    combined,
    compare,
    upper_quantile,
)

MARKERS_MAX = 8
POINTS_DEFAULT = 50
POINTS_MAX = 500
# The GLUE symbols a CI script is likely to write, as the registry names them.
SYMBOLS = {"d_eff": "dimension", "psi_eff": "utilization", "r_eff": "radius"}
BAND = "value ± 1 standard error (std/√repeats of the run's GLUE repeats and image subsets)"
# Protocol fields that change what a marker measures (seed and repeats change only its noise).
MEASURING = ("points_per_class", "centering", "dichotomy")
# The test's level as the answer states it (1 − 0.95 is 0.050000000000000044 in floating point).
LEVEL = round(ALPHA, 12)


@dataclass(frozen=True)
class Selection:
    """Which runs a trend follows. ``alias`` (within ``project``) follows the alias's moves; otherwise
    the runs matching every filter given (within ``project`` when one is named), oldest first."""

    project: str | None = None
    alias: str | None = None
    architecture: str | None = None
    name_contains: str | None = None
    tags: tuple[tuple[str, str], ...] = ()
    dataset: str | None = None
    since: datetime | None = None


@dataclass(frozen=True)
class Selected:
    """The runs in the trend's order, where each stands in time (``at``), and whether more matched."""

    runs: list[Run]
    at: list[datetime]
    truncated: bool
    order: str = "created_at"
    notes: list[str] = field(default_factory=list)


def select_runs(session: Session, selection: Selection, limit: int, caller: Caller | None = None) -> Selected:
    """The latest ``limit`` runs of ``selection``, oldest first; archived runs never take part.

    Along an alias: the run of each of its latest ``limit`` moves (at or after ``since``), in the order
    of the moves, within ``project`` (default: the default project). Otherwise the runs matching the
    filters (``app.db.run_queries.list_runs``, which leaves archived runs out), within ``project``, or
    within every project the caller's key may use when none is named. 403 for a project the key may
    not use, 404 ``project_not_found`` / ``alias_not_found``."""
    if selection.alias is not None:
        return _alias_runs(session, selection, limit, caller)
    flt = RunFilter(
        architecture=selection.architecture,
        name_contains=selection.name_contains,
        tags=selection.tags,
        dataset_fingerprint=selection.dataset,
        created_after=selection.since,
        projects=project_service.visible_project_names(session, caller, selection.project),
    )
    newest, more = list_runs(session, flt, descending=True, limit=limit)
    runs = list(reversed(newest))
    return Selected(runs, [run.created_at for run in runs], more is not None)


def _alias_runs(session: Session, selection: Selection, limit: int, caller: Caller | None) -> Selected:
    ignored = {
        "arch": selection.architecture,
        "name_contains": selection.name_contains,
        "tag": selection.tags,
        "dataset": selection.dataset,
    }
    given = [name for name, value in ignored.items() if value]
    if given:
        raise ServiceError(
            422,
            "invalid_request",
            f"{', '.join(given)}: an alias's history is the runs it pointed to, move by move; these "
            "filters choose among a project's runs (leave out alias, or leave them out)",
        )
    project = project_service.project_for(session, caller, selection.project)
    try:
        alias = check_alias_name(selection.alias or "")
    except BadSlug as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None
    try:
        moves = project_queries.alias_history(session, project.name, alias)
    except project_queries.UnknownAlias as exc:
        raise ServiceError(404, exc.code, exc.message) from None
    if selection.since is not None:
        moves = [move for move in moves if move.created_at >= selection.since]
    shown = moves[-limit:]
    found = {key: row.run for key, row in runs_with_markers(session, {m.to_run_id for m in shown}).items()}
    kept = [move for move in shown if move.to_run_id in found and found[move.to_run_id].archived_at is None]
    notes = []
    if len(kept) < len(shown):
        notes.append(
            f"{len(shown) - len(kept)} of the alias's moves led to runs since archived or deleted: left out"
        )
    return Selected(
        [found[move.to_run_id] for move in kept],
        [move.created_at for move in kept],
        len(moves) > limit,
        order=f"the moves of alias {alias!r} in project {project.name!r}",
        notes=notes,
    )


def resolve_markers(asked: Sequence[str]) -> list[tuple[str, MarkerInfo]]:
    """(name as asked, registry spec) for each distinct marker; 422 ``unknown_marker`` naming the
    known ones, 422 ``too_many_markers`` over ``MARKERS_MAX``, 422 ``invalid_request`` for none."""
    wanted = list(dict.fromkeys(name.strip() for name in asked if name.strip()))
    if not wanted:
        raise ServiceError(422, "invalid_request", "marker: name at least one marker (e.g. d_eff)")
    if len(wanted) > MARKERS_MAX:
        raise ServiceError(
            422, "too_many_markers", f"marker: at most {MARKERS_MAX} markers at once, got {len(wanted)}"
        )
    resolved: list[tuple[str, MarkerInfo]] = []
    for name in wanted:
        try:
            resolved.append((name, get_marker(SYMBOLS.get(name, name))))
        except ValueError:
            known = [spec.name for spec in list_markers()]
            raise ServiceError(
                422,
                "unknown_marker",
                f"marker {name[:64]!r} is not a marker; known: {known} and {sorted(SYMBOLS)}",
            ) from None
    return list({spec.name: (name, spec) for name, spec in resolved}.values())


def check_limit(limit: int) -> int:
    if not 2 <= limit <= POINTS_MAX:
        raise ServiceError(422, "invalid_request", f"limit: from 2 to {POINTS_MAX} points, got {limit}")
    return limit


def trends(
    session: Session,
    markers: Sequence[str],
    selection: Selection,
    limit: int = POINTS_DEFAULT,
    caller: Caller | None = None,
) -> TrendsOut:
    """Each marker's points over the selected runs and its drift verdict (module docstring), as
    ``caller`` (None: no key) may see them."""
    specs = resolve_markers(markers)
    check_limit(limit)
    selected = select_runs(session, selection, limit, caller)
    rows = markers_of(session, [run.id for run in selected.runs])
    filenames = upload_filenames(session, selected.runs)
    series = [_series(asked, spec, selected, rows, filenames) for asked, spec in specs]
    return TrendsOut(
        selection=TrendSelection(
            project=selection.project,
            alias=selection.alias,
            architecture=selection.architecture,
            name_contains=selection.name_contains,
            tags=[f"{key}={value}" for key, value in selection.tags],
            dataset=selection.dataset,
            since=selection.since,
            limit=limit,
            order=selected.order,
        ),
        runs=len(selected.runs),
        truncated=selected.truncated,
        test=TEST,
        band=BAND,
        series=series,
        warnings=[*selected.notes, *_warnings(selected.runs)],
    )


def _series(
    asked: str,
    spec: MarkerInfo,
    selected: Selected,
    rows: dict[uuid.UUID, list[Marker]],
    filenames: dict[str, str | None],
) -> TrendSeries:
    points: list[TrendPoint] = []
    estimates: list[Estimate] = []
    for index, (run, at) in enumerate(zip(selected.runs, selected.at, strict=True)):
        record = record_of(str(run.id), run, rows[run.id])
        estimate = record.estimate(spec.name)
        if estimate is None:
            continue
        std = record.stds.get(spec.name)
        reason = record.undecidable.get(spec.name)
        se = estimate.se
        points.append(
            TrendPoint(
                index=index,
                run_id=run.id,
                short_id=str(run.id)[:8],
                label=run_label(run, filenames),
                name=run.name,
                created_at=run.created_at,
                at=at,
                value=estimate.value,
                std=std,
                repeats=record.repeats,
                se=se,
                band=(estimate.value - se, estimate.value + se) if se is not None else None,
                decidable=reason is None,
                reason=reason,
                architecture=run.architecture,
                model=run.model_ref,
                tags=run.tag_map,
            )
        )
        estimates.append(estimate)
    return TrendSeries(
        marker=spec.name,
        asked=asked,
        description=spec.description,
        higher_is_better=spec.higher_is_better,
        points=points,
        missing=len(selected.runs) - len(points),
        drift=drift(points, estimates, spec.higher_is_better),
    )


def critical_value(df: float, alpha: float = LEVEL) -> float:
    """The two-sided critical value of the Welch test: t⁻¹_df(1 − α/2), the normal's for infinite df."""
    return upper_quantile(alpha / 2.0, df)


def drift(
    points: Sequence[TrendPoint], estimates: Sequence[Estimate], higher_is_better: bool | None
) -> Drift:
    """The last point against the first (module docstring); ``estimates[i]`` is ``points[i]``'s value."""
    if len(points) < 2:
        return _undecided(points, f"fewer than two points ({len(points)}): nothing to compare")
    first, last = points[0], points[-1]
    for which, point in (("first", first), ("last", last)):
        if not point.decidable:
            return _undecided(points, f"the {which} point ({point.short_id}) may not decide: {point.reason}")
        if point.se is None:
            return _undecided(points, f"the {which} point ({point.short_id}) has {NO_NOISE_ESTIMATE}")
    difference = compare(estimates[0], estimates[-1])
    se, df = combined([(1.0, estimates[-1]), (-1.0, estimates[0])])
    assert se is not None and difference.p_value is not None  # both points carry a standard error
    critical = critical_value(df)
    beyond = difference.significant
    direction: Direction = (
        "same" if difference.difference == 0 else "higher" if difference.difference > 0 else "lower"
    )
    better = None if not beyond or higher_is_better is None else (direction == "higher") == higher_is_better
    verdict: Verdict = "drift" if beyond else "within_noise"
    threshold = critical * se
    reason = (
        f"last − first = {difference.difference:.4g} ± {se:.2g}; "
        f"{'beyond' if beyond else 'within'} the noise (|Δ| {'>' if beyond else '≤'} {threshold:.3g} = "
        f"{critical:.3g}·se, p = {difference.p_value:.3g}, α = {LEVEL:.2g})"
    )
    return Drift(
        verdict=verdict,
        reason=reason,
        first_run_id=first.run_id,
        last_run_id=last.run_id,
        first=first.value,
        last=last.value,
        difference=difference.difference,
        se=se,
        df=df if math.isfinite(df) else None,
        alpha=LEVEL,
        critical=critical,
        threshold=threshold,
        p_value=difference.p_value,
        direction=direction,
        better=better,
    )


def _undecided(points: Sequence[TrendPoint], reason: str) -> Drift:
    first = points[0] if points else None
    last = points[-1] if len(points) > 1 else None
    return Drift(
        verdict="cannot_decide",
        reason=reason,
        first_run_id=first.run_id if first else None,
        last_run_id=last.run_id if last else None,
        first=first.value if first else None,
        last=last.value if last else None,
        difference=last.value - first.value if first and last else None,
        se=None,
        df=None,
        alpha=LEVEL,
        critical=None,
        threshold=None,
        p_value=None,
        direction=None,
        better=None,
    )


def _warnings(runs: Sequence[Run]) -> list[str]:
    """What makes a change along the trend something other than the weights' doing."""
    notes = []
    datasets = {run.dataset_fingerprint for run in runs}
    if len(datasets) > 1:
        notes.append(
            f"the runs span {len(datasets)} datasets (fingerprints): a change may come from the data, "
            "not the weights; choose one with dataset="
        )
    variants = {tuple(str(run.protocol.to_dict().get(key)) for key in MEASURING) for run in runs}
    if len(variants) > 1:
        notes.append(
            f"the runs were measured under {len(variants)} GLUE set-ups ({', '.join(MEASURING)}): "
            "their geometry markers are not on one scale"
        )
    return notes
