"""CI gates: a candidate against a baseline by rules. Bad rules are refused before anything is queued;
a stored run lends the gate its own sampling and protocol (the request may restate them, not change
them); decisions are stored."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy.orm import Session

from zootriage.app.api_keys import Caller
from zootriage.app.db import project_queries
from zootriage.app.db.models import Gate, Project, Run
from zootriage.app.db.paging import PageKey
from zootriage.app.db.run_queries import archived_among, markers_of, run_by_id
from zootriage.app.db.triage_queries import gate_by_id, list_gates, save_gate
from zootriage.app.project_names import DEFAULT_PROJECT
from zootriage.app.schemas.triage import (
    AliasRef,
    GateOut,
    GateRequest,
    Pending,
    StoredRun,
)
from zootriage.app.services import projects as project_service
from zootriage.app.services import short_ids
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
from zootriage.core.catalogue.markers import list_markers
from zootriage.core.data.refs import Sampling
from zootriage.core.evidence import rule_key, statement
from zootriage.core.triage import (
    RuleError,
    UnknownMetric,
    evaluate_gate,
    parse_rule,
)


def _stored_run(session: Session, subject: StoredRun, side: str) -> Run:
    """The run a side names by its id or a unique prefix (``app.services.short_ids``); 404 for none."""
    run = run_by_id(session, short_ids.resolve_uuid(session, short_ids.RUN, subject.id))
    if run is None:
        raise ServiceError(404, "run_not_found", f"the {side} names run {subject.id}, which does not exist")
    return run


def _side_record(subject: object, run: Run) -> dict[str, Any]:
    """A side as the decision keeps it: as it was asked, a stored run under its full id (however
    short the request named it)."""
    if isinstance(subject, StoredRun):
        return {"source": "run", "id": str(run.id)}
    assert isinstance(subject, BaseModel)
    return subject.model_dump(mode="json")


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


def gate(
    session: Session,
    settings: Settings,
    body: GateRequest,
    project: Project | None = None,
    caller: Caller | None = None,
) -> Pending | Gate:
    """Parse the rules first (bad rules cost no scoring), then find or queue both runs, then decide and
    store the decision, in ``project`` (None: the default project). An ``alias:NAME`` baseline is the
    run the alias of the project points to now; the stored gate names both. Stored runs (``run:ID``,
    aliases) must be visible to ``caller``'s key, and every run compared joins the project."""
    if project is None:
        project = project_queries.project_named(session, DEFAULT_PROJECT)
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
            project_service.check_run_visible(session, caller, runs[side].id)
        elif isinstance(subject, AliasRef):
            runs[side] = project_service.resolve_alias(session, project, subject.name)
        else:
            models[side] = wanted(subject)
    scoring = _plan(body, runs)
    if len(runs) == 2:
        _check_scored_alike(runs["candidate"], "candidate", scoring)
    gathered = gather(session, settings, models, scoring, project.id)
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
        candidate=_side_record(body.candidate, runs["candidate"]),
        baseline=_side_record(body.baseline, runs["baseline"]),
        dataset=body.dataset.model_dump(mode="json"),
        rules=[str(rule) for rule in rules],
        outcomes=[
            {**outcome.to_dict(), "evidence": statement(rule_key(outcome.rule.metric, *variant))}
            for outcome in result.outcomes
        ],
        passed=result.passed,
        status=result.status,
        project_id=project.id,
        baseline_alias=body.baseline.name if isinstance(body.baseline, AliasRef) else None,
    )
    project_queries.join_runs(session, project.id, [runs["candidate"].id, runs["baseline"].id])
    return save_gate(session, row)


def find_gate(session: Session, gate_id: uuid.UUID, caller: Caller | None = None) -> GateOut:
    """One stored decision; 404 ``gate_not_found``, 403 when ``caller``'s key may not use its project."""
    row = gate_by_id(session, gate_id)
    if row is None:
        raise ServiceError(404, "gate_not_found", f"no gate {gate_id}")
    project_service.check_access(caller, row.project_name)
    return gate_out(session, row)


def gate_out(session: Session, row: Gate, archived: dict[uuid.UUID, datetime] | None = None) -> GateOut:
    """A decision as the API shows it, saying which side's run is archived now: a gate against an
    archived baseline (``run:ID``, or an alias pointing to one) still decides, and its answer says so.
    ``archived``: the runs' archive times when the caller already has them (a page of gates)."""
    if archived is None:
        archived = archived_among(session, [row.candidate_run_id, row.baseline_run_id])
    warnings = [
        f"the {side} run {run_id} is archived (since {archived[run_id]:%Y-%m-%d %H:%M} UTC); the gate used it"
        for side, run_id in (("candidate", row.candidate_run_id), ("baseline", row.baseline_run_id))
        if run_id is not None and run_id in archived
    ]
    return GateOut.model_validate(row, context={"warnings": warnings})


def gate_page(
    session: Session,
    limit: int,
    after: PageKey | None,
    passed: bool | None = None,
    project_ids: tuple[int, ...] | None = None,
) -> tuple[list[GateOut], PageKey | None]:
    """One page of decisions, newest first (of the projects ``project_ids`` when given), and where the
    next begins."""
    rows, next_key = list_gates(session, limit=limit, after=after, passed=passed, project_ids=project_ids)
    sides = [run_id for row in rows for run_id in (row.candidate_run_id, row.baseline_run_id)]
    archived = archived_among(session, sides)
    return [gate_out(session, row, archived) for row in rows], next_key
