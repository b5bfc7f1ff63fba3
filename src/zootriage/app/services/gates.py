"""CI gates: a candidate against a baseline by rules. Bad rules are refused before anything is queued;
a stored run lends the gate its own sampling and protocol (the request may restate them, not change
them); decisions are stored."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from zootriage.app.db.models import Gate, Run
from zootriage.app.db.paging import PageKey
from zootriage.app.db.run_queries import markers_of, run_by_id
from zootriage.app.db.triage_queries import gate_by_id, list_gates, save_gate
from zootriage.app.schemas.triage import (
    GateOut,
    GateRequest,
    Pending,
    StoredRun,
)
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.triage import (
    ScoringPlan,
    Wanted,
    display_labels,
    gather,
    record_of,
    wanted,
)
from zootriage.app.settings import Settings
from zootriage.core.data.refs import Sampling
from zootriage.core.evidence import rule_key, statement
from zootriage.core.markers import list_markers
from zootriage.core.triage import (
    RuleError,
    UnknownMetric,
    evaluate_gate,
    parse_rule,
)


def _stored_run(session: Session, subject: StoredRun, side: str) -> Run:
    run = run_by_id(session, subject.id)
    if run is None:
        raise ServiceError(404, "run_not_found", f"the {side} names run {subject.id}, which does not exist")
    return run


def _plan(body: GateRequest, stored: dict[str, Run]) -> ScoringPlan:
    """The sampling and protocol the gate compares under. Without a stored run: the request's (a job
    fills in ``per_class`` for the repeats, ``Sampling.for_repeats``). With one (``run:ID``): that
    run's sampling and protocol as they are stored (``per_class`` and ``up_to`` as its job filled
    them in), so that the other side is scored on the very same images. A request may restate any
    field; one it states otherwise is refused (422 ``incomparable_runs``, naming it) before anything
    is queued."""
    if not stored:
        return ScoringPlan(body.dataset, body.sampling, body.protocol)
    side, run = (
        ("baseline", stored["baseline"]) if "baseline" in stored else ("candidate", stored["candidate"])
    )
    kept = ScoringPlan(body.dataset, Sampling.model_validate(run.sampling), run.protocol)
    conflicts = [
        f"{part}.{name} {getattr(asked, name)!r} (the run has {getattr(has, name)!r})"
        for part, asked, has in (
            ("sampling", body.sampling, kept.sampling),
            ("protocol", body.protocol, kept.protocol),
        )
        for name in sorted(asked.model_fields_set)
        if getattr(asked, name) != getattr(has, name)
    ]
    if conflicts:
        raise ServiceError(
            422,
            "incomparable_runs",
            f"the {side} run {run.id} was scored under another sampling or protocol than this gate asks: "
            f"{'; '.join(conflicts)}; leave these out to take the run's own",
        )
    return kept


def _check_scored_alike(run: Run, side: str, scoring: ScoringPlan) -> None:
    """Both sides stored: the other run must have been scored under the first one's sampling and
    protocol (checked before anything is queued)."""
    if run.sampling != scoring.sampling.model_dump(mode="json") or run.protocol != scoring.protocol:
        raise ServiceError(
            422,
            "incomparable_runs",
            f"the {side} run {run.id} was scored under another sampling or protocol than the other run",
        )


def _check_same_sample(candidate: Run, baseline: Run) -> None:
    """Only runs of one dataset sample are compared (docs/method.md, "The protocol")."""
    if candidate.dataset_fingerprint != baseline.dataset_fingerprint:
        raise ServiceError(
            422,
            "incomparable_runs",
            "the candidate and baseline runs were scored on different dataset samples",
        )


def gate(session: Session, settings: Settings, body: GateRequest) -> Pending | Gate:
    """Parse the rules first (bad rules cost no scoring), then find or queue both runs, then decide and
    store the decision."""
    known = {spec.name for spec in list_markers()}
    try:
        rules = [parse_rule(text, known) for text in body.rules]
    except UnknownMetric as exc:
        raise ServiceError(422, "unknown_metric", str(exc)) from None
    except RuleError as exc:
        raise ServiceError(422, "invalid_rule", str(exc)) from None
    runs: dict[str, Run] = {}
    models: dict[str, Wanted] = {}
    for side, subject in (("candidate", body.candidate), ("baseline", body.baseline)):
        if isinstance(subject, StoredRun):
            runs[side] = _stored_run(session, subject, side)
        else:
            models[side] = wanted(subject)
    scoring = _plan(body, runs)
    if len(runs) == 2:
        _check_scored_alike(runs["candidate"], "candidate", scoring)
    gathered = gather(session, settings, models, scoring)
    if (pending := gathered.pending()) is not None:
        return pending
    runs.update(gathered.runs)
    _check_same_sample(runs["candidate"], runs["baseline"])
    labels = display_labels(session, {side: want.name for side, want in models.items()}, runs)
    markers = markers_of(session, [runs["candidate"].id, runs["baseline"].id])
    candidate, baseline = (
        record_of(side, runs[side], markers[runs[side].id]) for side in ("candidate", "baseline")
    )
    result = evaluate_gate(candidate, baseline, rules)
    variant = (scoring.protocol.dichotomy, scoring.protocol.centering)
    row = Gate(
        candidate_run_id=runs["candidate"].id,
        baseline_run_id=runs["baseline"].id,
        candidate_label=labels["candidate"],
        baseline_label=labels["baseline"],
        candidate=body.candidate.model_dump(mode="json"),
        baseline=body.baseline.model_dump(mode="json"),
        dataset=body.dataset.model_dump(mode="json"),
        rules=[str(rule) for rule in rules],
        outcomes=[
            {**outcome.to_dict(), "evidence": statement(rule_key(outcome.rule.metric, *variant))}
            for outcome in result.outcomes
        ],
        passed=result.passed,
        status=result.status,
    )
    return save_gate(session, row)


def find_gate(session: Session, gate_id: uuid.UUID) -> GateOut:
    """One stored decision; 404 ``gate_not_found``."""
    row = gate_by_id(session, gate_id)
    if row is None:
        raise ServiceError(404, "gate_not_found", f"no gate {gate_id}")
    return GateOut.model_validate(row)


def gate_page(
    session: Session, limit: int, after: PageKey | None, passed: bool | None = None
) -> tuple[list[GateOut], PageKey | None]:
    """One page of decisions, newest first, and where the next begins."""
    rows, next_key = list_gates(session, limit=limit, after=after, passed=passed)
    return [GateOut.model_validate(row) for row in rows], next_key
