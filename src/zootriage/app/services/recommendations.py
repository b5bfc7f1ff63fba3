"""v1-vs-v2 recommendations: the verdict on a torchvision architecture's two ImageNet weights, from the
stored runs (``stored_verdict``, ``stored_recommendation``: nothing queued) or queueing the missing
runs first (``recommend``), and the verdicts the stored runs already give.

The stored-run answers read only the runs of the projects the caller may see (``projects``: their
ids; None: every project), as every other read of runs does: a key limited to ``alpha`` is not shown
``beta``'s runs of the same weights. ``recommend`` queues through ``app.services.jobs.create``, which
answers an identical request with its stored run wherever it was computed and joins that run to the
caller's project, so a write key gets the verdict without recomputing it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from sqlalchemy.orm import Session

from zootriage.app.db.models import Run
from zootriage.app.db.run_key import request_key
from zootriage.app.db.run_queries import markers_of
from zootriage.app.db.triage_queries import newest_runs_by_request
from zootriage.app.schemas.triage import (
    Comparison,
    Pending,
    Recommendation,
    RecommendationSummary,
    WeightsOut,
)
from zootriage.app.services.admission import normalised_request
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.triage import (
    Gathered,
    ScoringPlan,
    Wanted,
    advice_out,
    gather,
    job_request,
    record_of,
    rule_used,
    with_published_accuracy,
)
from zootriage.app.settings import Settings
from zootriage.core.catalogue.torchvision import WeightsPair, v1_v2_pairs, weights_info
from zootriage.core.protocol import Protocol
from zootriage.core.triage import (
    MarkerRecord,
    Rule,
    Verdict,
    accuracy_pick,
    verdict,
)
from zootriage.core.triage.advice import Advice, v1_v2_advice
from zootriage.core.zoo.refs import TorchvisionRef

V1, V2 = "IMAGENET1K_V1", "IMAGENET1K_V2"


@cache
def weight_pairs() -> dict[str, WeightsPair]:
    """torchvision's v1/v2 architectures with their published acc@1 (``core.catalogue.torchvision``)."""
    return {pair.arch: pair for pair in v1_v2_pairs()}


def pair_of(arch: str) -> WeightsPair:
    """The architecture's pair; ``UnknownModel`` (404) for no such architecture, 422 for one without."""
    pairs = weight_pairs()
    if arch in pairs:
        return pairs[arch]
    weights_info(arch, "DEFAULT")  # raises UnknownModel for an architecture torchvision does not know
    raise ServiceError(
        422,
        "no_v1_v2_pair",
        f"torchvision {arch} has no {V1} and {V2} weights to compare; architectures that do: "
        f"{', '.join(sorted(pairs))}",
    )


def _picks_agree(decision: str, by_accuracy: str) -> bool | None:
    return None if "undecided" in (decision, by_accuracy) else decision == by_accuracy


def _refs(arch: str) -> dict[str, TorchvisionRef]:
    return {V1: TorchvisionRef(arch=arch, weights=V1), V2: TorchvisionRef(arch=arch, weights=V2)}


def _judged(
    pair: WeightsPair, v1: MarkerRecord, v2: MarkerRecord, rule: Rule, protocol: Protocol
) -> tuple[Verdict, Advice]:
    """The verdict of ``rule`` and every candidate rule's (``core.triage.advice``). ImageNet weights
    scored on another label space have no measured ID accuracy: their published acc@1 stands in
    (``core.triage.published``), so the ID-accuracy rule is never structurally undecided."""
    records, source = with_published_accuracy([v1, v2], {V1: pair.v1_acc1, V2: pair.v2_acc1})
    result = verdict(records[0], records[1], rule)
    advice = v1_v2_advice(records[0], records[1], rule, (protocol.dichotomy, protocol.centering), source)
    return result, advice


def _recommendation(
    pair: WeightsPair, gathered: Gathered, rule: Rule, scoring: ScoringPlan
) -> Recommendation:
    """The verdict on both stored runs, beside what ImageNet acc@1 alone would pick."""
    arch, refs = pair.arch, _refs(pair.arch)
    result, advice = _judged(pair, gathered.record(V1, V1), gathered.record(V2, V2), rule, scoring.protocol)
    by_accuracy = accuracy_pick(pair.v1_acc1, pair.v2_acc1)

    def weights_out(weights: str, acc1: float | None) -> WeightsOut:
        scored = gathered.scored(weights, weights, refs[weights])
        return WeightsOut(**scored, weights=weights, imagenet_acc1=acc1)

    return Recommendation(
        architecture=arch,
        verdict=result.decision,
        reason=result.reason,
        rule=rule_used(rule, scoring.protocol),
        comparisons=[Comparison.model_validate(c, from_attributes=True) for c in result.comparisons],
        v1=weights_out(V1, pair.v1_acc1),
        v2=weights_out(V2, pair.v2_acc1),
        id_accuracy_pick=by_accuracy,
        picks_agree=_picks_agree(result.decision, by_accuracy),
        advice=advice_out(advice),
    )


def recommend(
    session: Session,
    settings: Settings,
    arch: str,
    scoring: ScoringPlan,
    rule: Rule,
    project_id: int | None = None,
) -> Pending | Recommendation:
    """The verdict once both weights are stored, else what is pending, the missing runs queued in
    project ``project_id`` (None: the default project), which the runs join."""
    pair = pair_of(arch)
    wanted = {key: Wanted(ref) for key, ref in _refs(arch).items()}
    gathered = gather(session, settings, wanted, scoring, project_id)
    if (pending := gathered.pending()) is not None:
        return pending
    return _recommendation(pair, gathered, rule, scoring)


def stored_verdict(
    session: Session, scoring: ScoringPlan, arch: str, rule: Rule, projects: Sequence[int] | None = None
) -> Recommendation:
    """``GET``'s answer: the verdict from the stored runs of ``projects`` alone (nothing is queued), or
    404 ``not_scored`` naming the stored run of each weights and the weights without one, and how to
    queue them."""
    shown = stored_recommendation(session, scoring, arch, rule, projects)
    if shown.recommendation is not None:
        return shown.recommendation
    missing = [weights for weights in (V1, V2) if weights not in shown.runs]
    stored = "".join(f"; {weights} is stored as run {run.id}" for weights, run in shown.runs.items())
    raise ServiceError(
        404,
        "not_scored",
        f"no verdict for {arch} yet: {' and '.join(missing)} {'has' if len(missing) == 1 else 'have'} no "
        f"stored run for this dataset, sampling and protocol{stored}. POST /v1/recommendations/{arch} "
        "with the same query (write access; zootriage recommend) queues the missing run(s)",
    )


def _stored_runs(
    session: Session, scoring: ScoringPlan, architectures: list[str], projects: Sequence[int] | None
) -> dict[tuple[str, str], Run]:
    """The newest stored run of each (architecture, weights) under this dataset, sampling and protocol
    in ``projects`` (None: any), found by request key: nothing is queued."""
    keys = {
        (arch, weights): request_key(
            normalised_request(job_request(Wanted(TorchvisionRef(arch=arch, weights=weights)), scoring))
        )
        for arch in architectures
        for weights in (V1, V2)
    }
    by_key = newest_runs_by_request(session, set(keys.values()), projects)
    return {pair: by_key[key] for pair, key in keys.items() if key in by_key}


@dataclass(frozen=True)
class StoredVerdict:
    """One architecture's verdict from stored runs only: ``recommendation`` None until both weights are
    scored; ``runs`` holds whichever of the two are stored (by weights name)."""

    pair: WeightsPair
    runs: dict[str, Run]
    recommendation: Recommendation | None
    id_accuracy_pick: str


def stored_recommendation(
    session: Session, scoring: ScoringPlan, arch: str, rule: Rule, projects: Sequence[int] | None = None
) -> StoredVerdict:
    """``recommend`` for a page: the same verdict, but from the stored runs of ``projects`` alone (no
    job is queued); 404/422 as ``pair_of`` for an architecture without a pair."""
    pair = pair_of(arch)
    latest = _stored_runs(session, scoring, [arch], projects)
    runs = {weights: latest[(arch, weights)] for weights in (V1, V2) if (arch, weights) in latest}
    by_accuracy = accuracy_pick(pair.v1_acc1, pair.v2_acc1)
    if len(runs) < 2:
        return StoredVerdict(pair, runs, None, by_accuracy)
    gathered = Gathered(runs, [], markers_of(session, [run.id for run in runs.values()]))
    return StoredVerdict(pair, runs, _recommendation(pair, gathered, rule, scoring), by_accuracy)


def recommendations_so_far(
    session: Session,
    scoring: ScoringPlan,
    architectures: list[str],
    rule: Rule,
    projects: Sequence[int] | None = None,
) -> list[RecommendationSummary]:
    """The verdicts the stored runs of ``projects`` already give, computing nothing and opening
    nothing: an architecture whose two runs are not both stored for this dataset, sampling and protocol
    (found by request key) has ``verdict=None``."""
    latest = _stored_runs(session, scoring, architectures, projects)
    markers = markers_of(session, [run.id for run in latest.values()])
    pairs = weight_pairs()
    items = []
    for arch in architectures:
        pair = pairs[arch]
        by_accuracy = accuracy_pick(pair.v1_acc1, pair.v2_acc1)
        found = [latest.get((arch, weights)) for weights in (V1, V2)]
        result, advice = None, None
        if found[0] is not None and found[1] is not None:
            result, advice = _judged(
                pair,
                record_of(V1, found[0], markers[found[0].id]),
                record_of(V2, found[1], markers[found[1].id]),
                rule,
                scoring.protocol,
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
                advice=advice_out(advice) if advice else None,
            )
        )
    return items
