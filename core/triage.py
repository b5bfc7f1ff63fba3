"""Triage rules over stored marker records: rankings, the v1-vs-v2 verdict and CI-gate rules.

Pure functions, shared by the API, the command line and the back-test, so that a recommendation
means the same thing wherever it is shown. Inputs are ``MarkerRecord`` objects built from stored
runs; nothing here reads a database or a model.

A rule names what "better" means (``make_rule``): ``geometry``, the paper's selection rule (among
weights of one architecture prefer higher D_eff, marker ``dimension``, AND higher Ψ_eff, marker
``utilization``), or one marker with a preferred direction (``id_accuracy``, ``logme``, ...). One
candidate is better than another only when every marker of the rule prefers it beyond the noise
(``core.noise``: a two-sided Welch test on the repeat means at 95%); a GLUE marker without a noise
estimate (one repeat) or from a degenerate GLUE regime never decides. Where the rule does not decide,
this module says why rather than guessing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from core.glue import MARKERS as GLUE_MARKERS
from core.markers import get_marker
from core.noise import NO_NOISE_ESTIMATE, TEST, Estimate, combined, compare, interval

DIMENSION = "dimension"
UTILIZATION = "utilization"
GEOMETRY = (DIMENSION, UTILIZATION)
ID_ACCURACY = "id_accuracy"
LOGME = "logme"

Side = Literal["v1", "v2"]
Decision = Literal["v1", "v2", "undecided"]


class UnknownRule(ValueError):
    """A triage rule that names no marker, or a marker with no preferred direction."""


@dataclass(frozen=True)
class MarkerRecord:
    """The markers of one scored model: ``values[name]`` is None when the marker did not apply;
    ``stds[name]`` the standard deviation over the ``repeats`` GLUE repeats (None with one repeat);
    ``undecidable[name]`` the reason a marker may not decide (a degenerate GLUE regime)."""

    name: str
    values: Mapping[str, float | None]
    stds: Mapping[str, float | None] = field(default_factory=dict)
    repeats: int = 1
    undecidable: Mapping[str, str] = field(default_factory=dict)

    def value(self, marker: str) -> float | None:
        value = self.values.get(marker)
        return None if value is None or not math.isfinite(value) else float(value)

    def estimate(self, marker: str) -> Estimate | None:
        """The value with its noise: GLUE markers carry their repeats' standard error, every other
        marker is a deterministic function of the stored sample."""
        value = self.value(marker)
        if value is None:
            return None
        if marker in GLUE_MARKERS:
            return Estimate.from_repeats(value, self.stds.get(marker), self.repeats)
        return Estimate.exact(value)


@dataclass(frozen=True)
class Rule:
    """What "better" means: every marker in ``markers`` must prefer the candidate beyond the noise."""

    name: str
    markers: tuple[str, ...]
    higher_is_better: tuple[bool, ...]

    def describe(self) -> str:
        wanted = " and ".join(
            f"{'higher' if h else 'lower'} {m}"
            for m, h in zip(self.markers, self.higher_is_better, strict=True)
        )
        return f"{self.name}: {wanted}, each beyond the noise ({TEST})"


def make_rule(name: str) -> Rule:
    """``geometry`` (D_eff and Ψ_eff both higher) or the name of a marker with a preferred direction."""
    if name == "geometry":
        return Rule("geometry", GEOMETRY, (True, True))
    try:
        spec = get_marker(name)
    except ValueError as exc:
        raise UnknownRule(f"unknown triage rule {name!r}: use 'geometry' or a marker name ({exc})") from None
    if spec.higher_is_better is None:
        raise UnknownRule(f"marker {name!r} has no preferred direction, so it cannot rank or decide")
    return Rule(name, (name,), (spec.higher_is_better,))


GEOMETRY_RULE = make_rule("geometry")


@dataclass(frozen=True)
class MarkerComparison:
    """One marker of a pair: ``difference`` = second − first, ``noise`` its standard error (None
    without a noise estimate), ``p_value`` the test's p, ``favours`` the side it supports beyond the
    noise (None when missing, undecidable or within the noise)."""

    marker: str
    v1: float | None
    v2: float | None
    v1_std: float | None
    v2_std: float | None
    difference: float | None
    noise: float | None
    p_value: float | None
    favours: Side | None


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str
    comparisons: tuple[MarkerComparison, ...]
    rule: Rule = GEOMETRY_RULE


def _compare(marker: str, higher: bool, v1: MarkerRecord, v2: MarkerRecord) -> MarkerComparison:
    a, b = v1.estimate(marker), v2.estimate(marker)
    s1, s2 = v1.stds.get(marker), v2.stds.get(marker)
    if a is None or b is None:
        return MarkerComparison(marker, v1.value(marker), v2.value(marker), s1, s2, None, None, None, None)
    diff = compare(a, b)
    favours: Side | None = None
    if diff.significant and not (marker in v1.undecidable or marker in v2.undecidable):
        favours = "v2" if (diff.difference > 0) == higher else "v1"
    return MarkerComparison(marker, a.value, b.value, s1, s2, diff.difference, diff.se, diff.p_value, favours)


def verdict(v1: MarkerRecord, v2: MarkerRecord, rule: Rule = GEOMETRY_RULE) -> Verdict:
    """v1 or v2 when every marker of ``rule`` prefers that side beyond the noise; else ``undecided``
    with the first reason that applies: a missing marker, a degenerate GLUE regime, no noise estimate
    (one repeat), a difference within the noise (with p), or markers that disagree."""
    comparisons = tuple(
        _compare(m, h, v1, v2) for m, h in zip(rule.markers, rule.higher_is_better, strict=True)
    )

    def undecided(why: str) -> Verdict:
        return Verdict("undecided", f"undecided: {why}", comparisons, rule)

    missing = [
        f"{c.marker} of {side}" for c in comparisons for side in ("v1", "v2") if getattr(c, side) is None
    ]
    if missing:
        return undecided(f"missing marker(s): {', '.join(missing)}")
    degenerate = [
        f"{c.marker} of {side}: {record.undecidable[c.marker]}"
        for c in comparisons
        for side, record in (("v1", v1), ("v2", v2))
        if c.marker in record.undecidable
    ]
    if degenerate:
        return undecided(f"not decidable ({'; '.join(degenerate)})")
    if any(c.p_value is None for c in comparisons):
        return undecided(NO_NOISE_ESTIMATE)
    noisy = [c for c in comparisons if c.favours is None]
    if noisy:
        return undecided(
            f"difference within noise ({'; '.join(f'{c.marker} p={c.p_value:.3g}' for c in noisy)})"
        )
    sides = {c.favours for c in comparisons}
    if len(sides) > 1:
        return undecided(
            f"the markers disagree ({', '.join(f'{c.marker} favours {c.favours}' for c in comparisons)})"
        )
    side = comparisons[0].favours
    assert side is not None
    ps = ", ".join(f"{c.marker} p={c.p_value:.3g}" for c in comparisons)
    return Verdict(side, f"{side}: {rule.describe()} ({ps})", comparisons, rule)


def accuracy_pick(v1_acc: float | None, v2_acc: float | None) -> Decision:
    """What "take the higher ImageNet acc@1" picks, for the side-by-side with the verdict."""
    if v1_acc is None or v2_acc is None or v1_acc == v2_acc:
        return "undecided"
    return "v1" if v1_acc > v2_acc else "v2"


# ---------------------------------------------------------------------------------------------- ranking


@dataclass(frozen=True)
class RankedEntry:
    """One candidate's place under the rule: ``rank`` 1 = best, equal ranks are ties (numbered like
    sports results: 1, 1, 3); ``front`` its front of the "better beyond the noise" relation; None
    where a marker of the rule is missing or may not decide."""

    name: str
    rank: int | None
    front: int | None
    id_accuracy_rank: int | None
    logme_rank: int | None
    disagrees_with_id_accuracy: bool
    disagrees_with_logme: bool
    missing: tuple[str, ...]
    unrankable: str | None


@dataclass(frozen=True)
class Ranking:
    """Entries in rule order (unrankable candidates last), the picks, and the pairs that ID accuracy or
    LogME order the other way round from the rule (each pair as (the rule's better, its worse)).
    ``reason`` says why the rule picks nobody."""

    entries: tuple[RankedEntry, ...]
    pick: str | None
    reason: str
    id_accuracy_pick: str | None
    logme_pick: str | None
    id_accuracy_discordant: tuple[tuple[str, str], ...]
    logme_discordant: tuple[tuple[str, str], ...]
    rule: Rule = GEOMETRY_RULE

    @property
    def picks_agree(self) -> bool | None:
        """Whether the rule and ID accuracy pick the same candidate (None when either cannot pick)."""
        if self.pick is None or self.id_accuracy_pick is None:
            return None
        return self.pick == self.id_accuracy_pick


def fronts_of(dominates: np.ndarray) -> np.ndarray:
    """Front index (0 = undominated) from a boolean relation ``dominates[a, b]`` (a beats b).

    Front 0 is the candidates nobody beats; front f+1 those beaten only by candidates of fronts <= f.
    The relation has no cycles: a beats b only when a's value of the rule's first marker is strictly
    preferred to b's, and values are totally ordered, so every step peels at least one candidate.
    """
    n = len(dominates)
    fronts = np.full(n, -1, dtype=np.int64)
    remaining = np.ones(n, dtype=bool)
    front = 0
    while remaining.any():
        current = remaining & ~(dominates & remaining[:, None]).any(axis=0)
        fronts[current] = front
        remaining &= ~current
        front += 1
    return fronts


def _competition_ranks(keys: Sequence[Any]) -> list[int]:
    """Ranks for keys sorted best first: equal keys share the rank of the first of them (1, 1, 3)."""
    ranks: list[int] = []
    for i, key in enumerate(keys):
        ranks.append(ranks[-1] if i and key == keys[i - 1] else i + 1)
    return ranks


def _order_by(records: Sequence[MarkerRecord], marker: str) -> dict[str, int]:
    """Competition ranks of the candidates that have ``marker``, higher first."""
    present = sorted(
        (r for r in records if r.value(marker) is not None), key=lambda r: (-(r.value(marker) or 0.0), r.name)
    )
    ranks = _competition_ranks([r.value(marker) for r in present])
    return {r.name: rank for r, rank in zip(present, ranks, strict=True)}


def _discordant(better: set[tuple[str, str]], other: Mapping[str, int]) -> list[tuple[str, str]]:
    """Pairs the rule decides one way and ``other`` strictly orders the other way."""
    return sorted((a, b) for a, b in better if a in other and b in other and other[a] > other[b])


def _unrankable(record: MarkerRecord, rule: Rule) -> str | None:
    missing = [m for m in rule.markers if record.value(m) is None]
    if missing:
        return f"missing marker(s): {', '.join(missing)}"
    bad = [f"{m}: {record.undecidable[m]}" for m in rule.markers if m in record.undecidable]
    return f"not decidable ({'; '.join(bad)})" if bad else None


def rank(records: Sequence[MarkerRecord], rule: Rule = GEOMETRY_RULE) -> Ranking:
    """Order candidates by ``rule`` beyond the noise, beside the orders ID accuracy and LogME give.

    a beats b when ``verdict(b, a, rule)`` decides for a (every marker of the rule prefers a beyond
    the noise). Candidates are peeled into fronts of that relation (``fronts_of``); one front shares
    one rank: candidates the noise cannot separate tie. A candidate missing a marker of the rule, or
    whose marker comes from a degenerate GLUE regime, goes last with ``rank=None``. The rule picks a
    candidate only when it is alone in the first front; otherwise ``reason`` says why not.
    """
    names = [r.name for r in records]
    if len(set(names)) != len(names):
        raise ValueError("candidate names must be unique")
    why_not = {r.name: _unrankable(r, rule) for r in records}
    placed = sorted((r for r in records if why_not[r.name] is None), key=lambda r: r.name)
    better: set[tuple[str, str]] = set()
    undecided_pairs: dict[tuple[str, str], str] = {}
    for i, a in enumerate(placed):
        for b in placed[i + 1 :]:
            result = verdict(a, b, rule)
            if result.decision == "v1":
                better.add((a.name, b.name))
            elif result.decision == "v2":
                better.add((b.name, a.name))
            else:
                undecided_pairs[(a.name, b.name)] = result.reason
    index = {r.name: i for i, r in enumerate(placed)}
    dominates = np.zeros((len(placed), len(placed)), dtype=bool)
    for winner, loser in better:
        dominates[index[winner], index[loser]] = True
    fronts = fronts_of(dominates) if placed else np.zeros(0, dtype=np.int64)
    order = sorted(index, key=lambda n: (fronts[index[n]], n))
    ranks = dict(zip(order, _competition_ranks([int(fronts[index[n]]) for n in order]), strict=True))
    by_accuracy = _order_by(records, ID_ACCURACY)
    by_logme = _order_by(records, LOGME)
    acc_pairs = _discordant(better, by_accuracy)
    logme_pairs = _discordant(better, by_logme)
    by_name = {r.name: r for r in records}
    entries = [
        RankedEntry(
            name=name,
            rank=ranks.get(name),
            front=int(fronts[index[name]]) + 1 if name in index else None,
            id_accuracy_rank=by_accuracy.get(name),
            logme_rank=by_logme.get(name),
            disagrees_with_id_accuracy=any(name in pair for pair in acc_pairs),
            disagrees_with_logme=any(name in pair for pair in logme_pairs),
            missing=tuple(m for m in (*rule.markers, ID_ACCURACY, LOGME) if by_name[name].value(m) is None),
            unrankable=why_not[name],
        )
        for name in [*order, *sorted(n for n in names if n not in index)]
    ]
    pick = _sole_best(ranks)
    if pick is not None:
        reason = f"{pick}: {rule.describe()}, against every other rankable candidate"
    elif not placed:
        reason = "undecided: no candidate can be ranked by this rule"
    else:
        first = [n for n, r in ranks.items() if r == 1]
        detail = [
            f"{a} vs {b}: {why}" for (a, b), why in undecided_pairs.items() if a in first and b in first
        ]
        reason = f"undecided: {', '.join(first)} share the first place ({'; '.join(detail) or 'alone'})"
    return Ranking(
        entries=tuple(entries),
        pick=pick,
        reason=reason,
        id_accuracy_pick=_sole_best(by_accuracy),
        logme_pick=_sole_best(by_logme),
        id_accuracy_discordant=tuple(acc_pairs),
        logme_discordant=tuple(logme_pairs),
        rule=rule,
    )


def _sole_best(ranks: dict[str, int]) -> str | None:
    """The one candidate ranked first; None when nobody is ranked or the first place is shared."""
    first = [name for name, r in ranks.items() if r == 1]
    return first[0] if len(first) == 1 else None


# ------------------------------------------------------------------------------------------------ gates

GateKind = Literal["min", "max", "max_drop", "max_relative_drop", "max_rise", "max_relative_rise"]
GATE_KINDS: tuple[str, ...] = ("min", "max", "max_drop", "max_relative_drop", "max_rise", "max_relative_rise")
_RULE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*:\s*([a-z_]+)\s+(\S+)\s*$")


class RuleError(ValueError):
    """A gate rule that does not parse."""


class UnknownMetric(RuleError):
    """A gate rule on a metric that no run carries."""

    def __init__(self, metric: str, known: Collection[str]):
        super().__init__(f"unknown metric {metric!r} in gate rule; known metrics: {', '.join(sorted(known))}")
        self.metric = metric


@dataclass(frozen=True)
class GateRule:
    """``metric: kind threshold``. With change = candidate − baseline:

    - ``min t`` / ``max t``: candidate >= t / candidate <= t (the baseline is shown, not used);
    - ``max_drop t``: −change <= t; ``max_rise t``: change <= t;
    - ``max_relative_drop t``: −change / |baseline| <= t; ``max_relative_rise t``: change / |baseline| <= t
      (a baseline of 0 makes the relative change undefined and the rule fails).
    """

    metric: str
    kind: GateKind
    threshold: float

    def __str__(self) -> str:
        return f"{self.metric}: {self.kind} {self.threshold:g}"


def parse_rule(text: str, known: Collection[str]) -> GateRule:
    """Parse ``"dimension: max_relative_drop 0.05"``; ``RuleError`` or ``UnknownMetric`` (naming it)."""
    match = _RULE.match(text)
    if match is None:
        raise RuleError(
            f"gate rule {text!r} does not parse; expected 'metric: kind threshold', "
            f"kind one of {', '.join(GATE_KINDS)}"
        )
    metric, kind, raw = match.groups()
    if kind not in GATE_KINDS:
        raise RuleError(f"gate rule {text!r}: unknown kind {kind!r}; kinds: {', '.join(GATE_KINDS)}")
    try:
        threshold = float(raw)
    except ValueError:
        raise RuleError(f"gate rule {text!r}: threshold {raw!r} is not a number") from None
    if not math.isfinite(threshold):
        raise RuleError(f"gate rule {text!r}: threshold must be finite")
    if metric not in known:
        raise UnknownMetric(metric, known)
    return GateRule(metric, kind, threshold)  # type: ignore[arg-type]


GateStatus = Literal["passed", "failed", "inconclusive"]


@dataclass(frozen=True)
class RuleOutcome:
    rule: GateRule
    candidate: float | None
    baseline: float | None
    change: float | None
    relative_change: float | None
    status: GateStatus
    reason: str
    interval: tuple[float, float] | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": str(self.rule),
            "metric": self.rule.metric,
            "kind": self.rule.kind,
            "threshold": self.rule.threshold,
            "candidate": self.candidate,
            "baseline": self.baseline,
            "change": self.change,
            "relative_change": self.relative_change,
            "passed": self.passed,
            "status": self.status,
            "interval": list(self.interval) if self.interval else None,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class GateResult:
    outcomes: tuple[RuleOutcome, ...]
    test: str = TEST

    @property
    def status(self) -> GateStatus:
        """Failed when a rule failed; else inconclusive when a rule could not decide; else passed (a
        gate with no rules passes vacuously)."""
        statuses = {o.status for o in self.outcomes}
        if "failed" in statuses:
            return "failed"
        return "inconclusive" if "inconclusive" in statuses else "passed"

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def failures(self) -> tuple[RuleOutcome, ...]:
        return tuple(o for o in self.outcomes if o.status == "failed")


_STATISTIC = {
    "min": "candidate",
    "max": "candidate",
    "max_drop": "drop",
    "max_rise": "rise",
    "max_relative_drop": "relative drop",
    "max_relative_rise": "relative rise",
}


def _statistic(kind: str, cand: Estimate, base: Estimate | None) -> tuple[float, float | None, float]:
    """The rule's statistic with its standard error and df (``core.noise``; delta method for the
    relative kinds)."""
    if kind in ("min", "max"):
        return cand.value, cand.se, cand.df
    assert base is not None
    sign = -1.0 if kind in ("max_drop", "max_relative_drop") else 1.0
    if kind in ("max_drop", "max_rise"):
        se, df = combined([(sign, cand), (-sign, base)])
        return sign * (cand.value - base.value), se, df
    scale = abs(base.value)
    se, df = combined([(sign / scale, cand), (-sign * cand.value / (base.value * scale), base)])
    return sign * (cand.value - base.value) / scale, se, df


def _check(
    rule: GateRule, cand: Estimate, base: Estimate | None
) -> tuple[GateStatus, str, tuple[float, float] | None]:
    """Pass when the whole 95% interval of the statistic is on the allowed side of the threshold, fail
    when it is wholly on the other side, inconclusive when the threshold lies inside it."""
    if rule.kind not in ("min", "max"):
        if base is None:
            return "failed", "the baseline has no value for this metric", None
        if rule.kind.startswith("max_relative") and base.value == 0:
            return "failed", "relative change undefined: the baseline value is 0", None
    what = _STATISTIC[rule.kind]
    stat, se, df = _statistic(rule.kind, cand, base)
    relative = rule.kind.startswith("max_relative")
    fmt = (lambda v: f"{v:.4%}") if relative else (lambda v: f"{v:.6g}")
    if se is None:
        return "inconclusive", f"{what} {fmt(stat)} vs {fmt(rule.threshold)}: {NO_NOISE_ESTIMATE}", None
    lo, hi = interval(stat, se, df)
    t = rule.threshold
    shown = f"{what} {fmt(stat)}" + (f" [95% CI {fmt(lo)}, {fmt(hi)}]" if se > 0 else "")
    at_least = rule.kind == "min"
    ok, bad = (lo >= t, hi < t) if at_least else (hi <= t, lo > t)
    if ok:
        return "passed", f"{shown} {'>=' if at_least else '<='} {fmt(t)}", (lo, hi)
    if bad:
        return "failed", f"{shown} {'<' if at_least else '>'} {fmt(t)}", (lo, hi)
    return "inconclusive", f"{shown} contains the threshold {fmt(t)}: within the noise", (lo, hi)


def evaluate_gate(candidate: MarkerRecord, baseline: MarkerRecord, rules: Sequence[GateRule]) -> GateResult:
    """Every rule with both values, the change and its status. A candidate without a value for a
    rule's metric fails that rule: a gate fails closed, it never passes on missing evidence. A metric
    from a degenerate GLUE regime is inconclusive: its numbers carry no geometry."""
    outcomes = []
    for rule in rules:
        cand, base = candidate.estimate(rule.metric), baseline.estimate(rule.metric)
        change = None if cand is None or base is None else cand.value - base.value
        relative = None if change is None or base is None or not base.value else change / abs(base.value)
        interval_: tuple[float, float] | None = None
        degenerate = candidate.undecidable.get(rule.metric) or baseline.undecidable.get(rule.metric)
        if cand is None:
            status: GateStatus = "failed"
            reason = "the candidate has no value for this metric"
        elif degenerate:
            status, reason = "inconclusive", f"not decidable: {degenerate}"
        else:
            status, reason, interval_ = _check(rule, cand, base)
        outcomes.append(
            RuleOutcome(
                rule,
                None if cand is None else cand.value,
                None if base is None else base.value,
                change,
                relative,
                status,
                reason,
                interval_,
            )
        )
    return GateResult(tuple(outcomes))
