"""Triage orchestration: find the runs an answer needs, queue the missing ones, apply ``core.triage``.

Runs are found and queued through the job service, so a triage request is idempotent exactly as a
job is: the same model, data and protocol is never scored twice, and asking again while its job runs
queues nothing new. Models are queued one by one (each ``submit`` commits), so when a later candidate
turns out to be bad input the earlier ones stay queued: their runs are valid and will be reused.
A job that failed is queued again on the next ask; clients should watch the jobs they are given.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

from sqlalchemy.orm import Session

from app.db.models import Gate, Job, Marker, Run
from app.db.paging import PageKey
from app.db.run_key import request_key
from app.db.run_queries import markers_of, run_by_id, upload_filenames
from app.db.triage_queries import gate_by_id, list_gates, newest_runs_by_request, save_gate
from app.labels import reference_of, run_label, stored_reference, warnings_of
from app.schemas.jobs import JobOut, JobRequest
from app.schemas.triage import (
    Comparison,
    GateOut,
    GateRequest,
    MarkerStat,
    NamedModel,
    Pending,
    RankedOut,
    RankingOut,
    RankingRequest,
    Recommendation,
    RecommendationSummary,
    RuleUsed,
    StoredRun,
    WeightsOut,
)
from app.services import jobs as job_service
from app.services.admission import normalised_request
from app.services.errors import ServiceError
from app.settings import Settings
from core.data.refs import AnyDatasetRef, Sampling
from core.evidence import evidence_for, rule_key, statement
from core.markers import list_markers
from core.noise import TEST
from core.protocol import Protocol
from core.triage import (
    MarkerRecord,
    Rule,
    RuleError,
    UnknownMetric,
    UnknownRule,
    Verdict,
    accuracy_pick,
    evaluate_gate,
    make_rule,
    parse_rule,
    rank,
    verdict,
)
from core.zoo import WeightsPair, v1_v2_pairs
from core.zoo.refs import AnyModelRef, TorchvisionRef
from core.zoo.torchvision_zoo import weights_enum

V1, V2 = "IMAGENET1K_V1", "IMAGENET1K_V2"


@dataclass(frozen=True)
class ScoringPlan:
    """Where and how every model of one triage question is scored."""

    dataset: AnyDatasetRef
    sampling: Sampling
    protocol: Protocol


@dataclass(frozen=True)
class Wanted:
    """A model a triage answer needs, with the name and tags its run gets when it is queued."""

    model: AnyModelRef
    name: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)


def wanted(subject: AnyModelRef | NamedModel) -> Wanted:
    if isinstance(subject, NamedModel):
        return Wanted(subject.model, subject.name, subject.tags)
    return Wanted(subject)


@dataclass(frozen=True)
class Gathered:
    """The stored runs by key, and the jobs still computing the others."""

    runs: dict[str, Run]
    jobs: list[Job]
    markers: dict[uuid.UUID, list[Marker]]

    def pending(self) -> Pending | None:
        return Pending(jobs=[JobOut.model_validate(job) for job in self.jobs]) if self.jobs else None

    def record(self, key: str, label: str) -> MarkerRecord:
        run = self.runs[key]
        return record_of(label, run, self.markers[run.id])

    def stats(self, key: str) -> dict[str, MarkerStat]:
        return {
            m.name: MarkerStat(value=m.value, std=m.std, decidable=m.decidable, reason=m.reason)
            for m in self.markers[self.runs[key].id]
        }


def display_labels(
    session: Session, names: Mapping[str, str | None], runs: Mapping[str, Run]
) -> dict[str, str]:
    """Each run's label (``app.labels.run_label``: the name given in this request, else its run's, else
    the upload's file name, else the short reference); a label two runs share is followed by the
    reference."""
    filenames = upload_filenames(session, list(runs.values()))
    labels = {key: run_label(run, filenames, names.get(key)) for key, run in runs.items()}
    counts = Counter(labels.values())
    return {
        key: f"{text} ({stored_reference(runs[key].model_ref)})" if counts[text] > 1 else text
        for key, text in labels.items()
    }


def record_of(label: str, run: Run, markers: list[Marker]) -> MarkerRecord:
    """The stored markers as ``core.triage`` reads them: the run's repeats give the noise of its GLUE
    markers, and markers from a degenerate regime may not decide."""
    return MarkerRecord(
        label,
        {m.name: m.value for m in markers},
        {m.name: m.std for m in markers},
        repeats=run.protocol.repeats,
        undecidable={m.name: m.reason or "not decidable" for m in markers if not m.decidable},
    )


def triage_rule(name: str) -> Rule:
    """The rule a user named; 422 ``unknown_rule`` for a name that is no rule."""
    try:
        return make_rule(name)
    except UnknownRule as exc:
        raise ServiceError(422, "unknown_rule", str(exc)) from None


def rule_used(rule: Rule, protocol: Protocol) -> RuleUsed:
    """What an answer applied, with the back-test evidence for it under this GLUE variant."""
    dichotomy, centering = protocol.dichotomy, protocol.centering
    key = rule_key(rule.name, dichotomy, centering)
    found = evidence_for(key)
    return RuleUsed(
        name=rule.name,
        markers=list(rule.markers),
        glue_variant=f"{dichotomy},{centering}",
        noise_test=TEST,
        description=rule.describe(),
        evidence=statement(key),
        evidence_detail=found.to_dict() if found else None,
    )


def _request(want: Wanted, scoring: ScoringPlan) -> JobRequest:
    return JobRequest(
        model=want.model, dataset=scoring.dataset, sampling=scoring.sampling, protocol=scoring.protocol,
        name=want.name, tags=dict(want.tags),
    )


def gather(
    session: Session, settings: Settings, models: Mapping[str, Wanted], scoring: ScoringPlan
) -> Gathered:
    """Each model's stored run, or its job (queued now or already running). Two labels naming the same
    weights (``DEFAULT`` and the member it stands for) share one job."""
    runs: dict[str, Run] = {}
    jobs: dict[uuid.UUID, Job] = {}
    for key, want in models.items():
        submitted = job_service.submit(session, settings, _request(want, scoring), None)
        if submitted.run is not None:
            runs[key] = submitted.run
        elif submitted.job is not None:
            jobs[submitted.job.id] = submitted.job
    markers = markers_of(session, [run.id for run in runs.values()]) if not jobs else {}
    return Gathered(runs, list(jobs.values()), markers)


# --- recommendations -----------------------------------------------------------------------------------


@cache
def weight_pairs() -> dict[str, WeightsPair]:
    """torchvision's v1/v2 architectures; listing them builds every weights enum, so once per process."""
    return {pair.arch: pair for pair in v1_v2_pairs()}


def pair_of(arch: str) -> WeightsPair:
    """The architecture's pair; ``UnknownModel`` (404) for no such architecture, 422 for one without."""
    pairs = weight_pairs()
    if arch in pairs:
        return pairs[arch]
    weights_enum(arch, "DEFAULT")  # raises UnknownModel for an architecture torchvision does not know
    raise ServiceError(
        422,
        "no_v1_v2_pair",
        f"torchvision {arch} has no {V1} and {V2} weights to compare; architectures that do: "
        f"{', '.join(sorted(pairs))}",
    )


def _comparisons(result: Verdict) -> list[Comparison]:
    return [
        Comparison(
            marker=c.marker,
            v1=c.v1,
            v2=c.v2,
            v1_std=c.v1_std,
            v2_std=c.v2_std,
            difference=c.difference,
            noise=c.noise,
            p_value=c.p_value,
            favours=c.favours,
        )
        for c in result.comparisons
    ]


def _picks_agree(decision: str, by_accuracy: str) -> bool | None:
    return None if "undecided" in (decision, by_accuracy) else decision == by_accuracy


def recommend(
    session: Session, settings: Settings, arch: str, scoring: ScoringPlan, rule: Rule
) -> Pending | Recommendation:
    pair = pair_of(arch)
    refs = {V1: TorchvisionRef(arch=arch, weights=V1), V2: TorchvisionRef(arch=arch, weights=V2)}
    gathered = gather(session, settings, {key: Wanted(ref) for key, ref in refs.items()}, scoring)
    if (pending := gathered.pending()) is not None:
        return pending
    result = verdict(gathered.record(V1, V1), gathered.record(V2, V2), rule)
    by_accuracy = accuracy_pick(pair.v1_acc1, pair.v2_acc1)

    def weights_out(weights: str, acc1: float | None) -> WeightsOut:
        return WeightsOut(
            label=weights,
            model=refs[weights].model_dump(mode="json"),
            run_id=gathered.runs[weights].id,
            markers=gathered.stats(weights),
            warnings=warnings_of(gathered.runs[weights].model_meta),
            weights=weights,
            imagenet_acc1=acc1,
        )

    return Recommendation(
        architecture=arch,
        verdict=result.decision,
        reason=result.reason,
        rule=rule_used(rule, scoring.protocol),
        comparisons=_comparisons(result),
        v1=weights_out(V1, pair.v1_acc1),
        v2=weights_out(V2, pair.v2_acc1),
        id_accuracy_pick=by_accuracy,
        picks_agree=_picks_agree(result.decision, by_accuracy),
    )


def recommendations_so_far(
    session: Session, scoring: ScoringPlan, architectures: list[str], rule: Rule
) -> list[RecommendationSummary]:
    """The verdicts the stored runs already give, computing nothing and opening nothing: an
    architecture whose two runs are not both stored for this dataset, sampling and protocol (found by
    request key) has ``verdict=None``."""
    keys = {
        (arch, weights): request_key(
            normalised_request(_request(Wanted(TorchvisionRef(arch=arch, weights=weights)), scoring))
        )
        for arch in architectures
        for weights in (V1, V2)
    }
    by_key = newest_runs_by_request(session, set(keys.values()))
    latest = {pair: by_key[key] for pair, key in keys.items() if key in by_key}
    markers = markers_of(session, [run.id for run in latest.values()])
    pairs = weight_pairs()
    items = []
    for arch in architectures:
        pair = pairs[arch]
        by_accuracy = accuracy_pick(pair.v1_acc1, pair.v2_acc1)
        found = [latest.get((arch, weights)) for weights in (V1, V2)]
        result = None
        if found[0] is not None and found[1] is not None:
            result = verdict(
                record_of(V1, found[0], markers[found[0].id]),
                record_of(V2, found[1], markers[found[1].id]),
                rule,
            )
        items.append(
            RecommendationSummary(
                architecture=arch,
                v1_acc1=pair.v1_acc1,
                v2_acc1=pair.v2_acc1,
                verdict=result.decision if result else None,
                reason=result.reason if result else None,
                id_accuracy_pick=by_accuracy,
                picks_agree=_picks_agree(result.decision, by_accuracy) if result else None,
            )
        )
    return items


# --- rankings ------------------------------------------------------------------------------------------


def ranking(session: Session, settings: Settings, body: RankingRequest) -> Pending | RankingOut:
    rule = triage_rule(body.rule)
    models: dict[str, Wanted] = {}
    for candidate in body.candidates:
        want = wanted(candidate)
        key = want.model.model_dump_json()
        if key in models:
            raise ServiceError(
                422, "duplicate_candidates", f"candidate {reference_of(want.model)} is listed more than once"
            )
        models[key] = want
    scoring = ScoringPlan(body.dataset, body.sampling, body.protocol)
    gathered = gather(session, settings, models, scoring)
    if (pending := gathered.pending()) is not None:
        return pending
    labels = display_labels(session, {key: want.name for key, want in models.items()}, gathered.runs)
    keys = {text: key for key, text in labels.items()}
    result = rank([gathered.record(key, labels[key]) for key in models], rule)
    entries = [
        RankedOut(
            label=e.name,
            model=models[keys[e.name]].model.model_dump(mode="json"),
            run_id=gathered.runs[keys[e.name]].id,
            markers=gathered.stats(keys[e.name]),
            warnings=warnings_of(gathered.runs[keys[e.name]].model_meta),
            rank=e.rank,
            front=e.front,
            unrankable=e.unrankable,
            id_accuracy_rank=e.id_accuracy_rank,
            logme_rank=e.logme_rank,
            disagrees_with_id_accuracy=e.disagrees_with_id_accuracy,
            disagrees_with_logme=e.disagrees_with_logme,
            missing=list(e.missing),
        )
        for e in result.entries
    ]
    return RankingOut(
        entries=entries,
        pick=result.pick,
        reason=result.reason,
        rule=rule_used(rule, scoring.protocol),
        id_accuracy_pick=result.id_accuracy_pick,
        logme_pick=result.logme_pick,
        picks_agree=result.picks_agree,
        id_accuracy_discordant=list(result.id_accuracy_discordant),
        logme_discordant=list(result.logme_discordant),
    )


# --- gates ---------------------------------------------------------------------------------------------


def _stored_run(session: Session, subject: StoredRun, side: str) -> Run:
    run = run_by_id(session, subject.id)
    if run is None:
        raise ServiceError(404, "run_not_found", f"the {side} names run {subject.id}, which does not exist")
    return run


def _check_scored_alike(run: Run, side: str, scoring: ScoringPlan) -> None:
    """A stored run is only compared under the gate's own sampling and protocol: checked before
    anything is queued for the other side, so a mismatch costs no scoring."""
    if run.sampling != scoring.sampling.model_dump(mode="json") or run.protocol != scoring.protocol:
        raise ServiceError(
            422,
            "incomparable_runs",
            f"the {side} run {run.id} was scored under another sampling or protocol than this gate's",
        )


def _check_same_sample(candidate: Run, baseline: Run) -> None:
    """Only runs of one dataset sample are compared (shared/ARCHITECTURE.md)."""
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
    scoring = ScoringPlan(body.dataset, body.sampling, body.protocol)
    runs: dict[str, Run] = {}
    models: dict[str, Wanted] = {}
    for side, subject in (("candidate", body.candidate), ("baseline", body.baseline)):
        if isinstance(subject, StoredRun):
            runs[side] = _stored_run(session, subject, side)
            _check_scored_alike(runs[side], side, scoring)
        else:
            models[side] = wanted(subject)
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
