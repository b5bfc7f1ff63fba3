"""Back-tests on stored runs: does each marker predict the OOD outcome a user measured?

The rules: every named run must exist (404 ``run_not_found``), all were scored under one protocol
(422 ``mixed_protocols``) on one ID dataset (422 ``mixed_datasets``), and the markers asked for are
carried by some run (422 ``unknown_marker``). Runs of one architecture sharing the value of the tag
``recipe_tag`` are the seeds of one recipe. By default, study 3's confirmatory method
(``core.backtest.on_runs3``, docs/study/PLAN-3.md): each rule's correct / wrong / undecided picks over
noise-eligible recipe pairs, its accuracy with the architecture-cluster bootstrap interval, and d_a
against the ID-accuracy rule with the exact sign-flip p over architectures.
``method="preregistered"`` applies study 2's method (``core.backtest.on_runs``, docs/study/PLAN.md):
ρ̄ with its recipe-bootstrap interval and permutation p, and each rule's pairwise accuracy with Δ
against the ID-accuracy rule. ``method="first-study"`` keeps the first study's statistics
(``core.backtest.first_method.backtest``: Pearson and Spearman pooled and per architecture, per-model
pairwise win rates), the answer before ``method``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from zootriage.app.api_keys import Caller
from zootriage.app.db.run_queries import RunWithMarkers, runs_with_markers
from zootriage.app.schemas.backtests import BacktestOut, BacktestRequest
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.projects import check_runs_visible
from zootriage.core.backtest import on_runs3
from zootriage.core.backtest.first_method import Record, backtest
from zootriage.core.backtest.on_runs import RunOutcome, analyse
from zootriage.core.evidence import RuleEvidence, evidence_for, load_evidence

SHOWN_MISSING = 10


def _check_comparable(found: Mapping[uuid.UUID, RunWithMarkers]) -> None:
    protocols = {item.run.protocol for item in found.values()}
    if len(protocols) > 1:
        raise ServiceError(
            422,
            "mixed_protocols",
            f"the runs were scored under {len(protocols)} different "
            "protocols; back-test runs of one protocol at a time",
        )
    datasets = {item.run.dataset_fingerprint for item in found.values()}
    if len(datasets) > 1:
        raise ServiceError(
            422,
            "mixed_datasets",
            f"the runs were scored on {len(datasets)} different ID datasets; "
            "back-test runs scored on one dataset",
        )


@dataclass(frozen=True)
class BacktestAnswer:
    """The answer of ``POST /v1/backtests`` and the per-run records it was computed from (for plots)."""

    result: BacktestOut
    records: list[Record]


def run_backtest(session: Session, body: BacktestRequest, caller: Caller | None) -> BacktestOut:
    """Correlate every marker (or those named) of the named runs with the outcomes given for them."""
    return backtest_with_records(session, body, caller).result


def backtest_with_records(session: Session, body: BacktestRequest, caller: Caller | None) -> BacktestAnswer:
    """``run_backtest`` with each run's record (id, architecture, outcome, marker values) beside it.
    Every run must be in a project ``caller``'s key may use (403 first, so a key limited to projects
    learns nothing of other runs, not even whether they exist), then exist (404)."""
    check_runs_visible(session, caller, list(body.outcomes))
    found = runs_with_markers(session, body.outcomes.keys())
    missing = [str(run_id) for run_id in body.outcomes if run_id not in found]
    if missing:
        more = len(missing) - SHOWN_MISSING
        shown = ", ".join(missing[:SHOWN_MISSING]) + (f" and {more} more" if more > 0 else "")
        raise ServiceError(404, "run_not_found", f"no run(s) {shown}")
    _check_comparable(found)
    if body.markers is not None:
        known = {name for item in found.values() for name in item.values}
        unknown = sorted(set(body.markers) - known)
        if unknown:
            raise ServiceError(
                422, "unknown_marker", f"no run carries marker(s) {unknown}; they carry {sorted(known)}"
            )
    records = [
        Record(str(run_id), found[run_id].run.architecture or "-", outcome, found[run_id].values)
        for run_id, outcome in body.outcomes.items()
    ]
    try:
        if body.method == "first-study":
            first = backtest(records, body.markers, n_boot=body.n_boot, seed=body.seed).to_dict()
            return BacktestAnswer(BacktestOut.model_validate({**first, "method": body.method}), records)
        names = body.markers or sorted({name for r in records for name in r.markers})
        recipes = {str(run_id): _recipe(item, body.recipe_tag) for run_id, item in found.items()}
        runs = [RunOutcome(r.model, r.architecture, recipes[r.model], r.outcome, r.markers) for r in records]
        if body.method == "confirmatory":
            result = on_runs3.analyse(runs, names, n_boot=body.n_boot)
        else:
            result = analyse(runs, names, n_boot=body.n_boot, n_perm=body.n_perm, seed=body.seed)
    except ValueError as exc:
        raise ServiceError(422, "invalid_backtest", str(exc)) from None
    architectures: dict[str, int] = {}
    for r in records:
        architectures[r.architecture] = architectures.get(r.architecture, 0) + 1
    out = BacktestOut.model_validate(
        {**result, "n_models": len(records), "architectures": dict(sorted(architectures.items()))}
    )
    return BacktestAnswer(out, records)


def _recipe(item: RunWithMarkers, tag: str) -> str | None:
    """The run's value of the recipe tag; None when it has none."""
    return next((t.value for t in item.run.tags if t.key == tag), None)


@dataclass(frozen=True)
class StudyEvidence:
    """The project's own back-test study (``core/evidence.json``): each outcome's rules, primary first."""

    study: str
    version: int
    primary_outcome: str
    default: dict[str, Any] | None
    outcomes: list[tuple[str, list[RuleEvidence]]]


def study_evidence() -> StudyEvidence:
    """Every rule of every outcome as ``core.evidence.RuleEvidence`` (win rate with its Wilson interval,
    ID accuracy's rate on the same pairs, Δ with its interval for version 2, and ``beats_id_accuracy``)."""
    doc = load_evidence()
    primary = str(doc["primary_outcome"])
    names = sorted(doc["outcomes"], key=lambda name: (name != primary, name))
    outcomes = []
    for outcome in names:
        rules = [evidence_for(key, outcome) for key in sorted(doc["outcomes"][outcome]["rules"])]
        outcomes.append((outcome, [rule for rule in rules if rule is not None]))
    return StudyEvidence(str(doc["study"]), int(doc["version"]), primary, doc.get("default"), outcomes)
