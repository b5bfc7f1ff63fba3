"""Triage rules over stored marker records: rankings, the v1-vs-v2 verdict and CI-gate rules.

Pure functions (numpy only), shared by the API, the command line and the back-test, so that a
recommendation means the same thing wherever it is shown. Inputs are ``MarkerRecord`` objects built from
stored runs; nothing here reads a database or a model.

The paper's selection rule (shared/GLUE.md): among weights of one architecture, prefer higher D_eff
(marker ``dimension``) AND higher Ψ_eff (marker ``utilization``). Where the two markers disagree the
paper does not decide; this module says so rather than guessing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

DIMENSION = "dimension"
UTILIZATION = "utilization"
GEOMETRY = (DIMENSION, UTILIZATION)
ID_ACCURACY = "id_accuracy"
LOGME = "logme"

Side = Literal["v1", "v2"]
Decision = Literal["v1", "v2", "undecided"]


@dataclass(frozen=True)
class MarkerRecord:
    """The markers of one scored model: ``values[name]`` is None when the marker did not apply;
    ``stds[name]`` is the standard deviation over GLUE repeats where there were repeats."""

    name: str
    values: Mapping[str, float | None]
    stds: Mapping[str, float | None] = field(default_factory=dict)

    def value(self, marker: str) -> float | None:
        value = self.values.get(marker)
        return None if value is None or not math.isfinite(value) else float(value)

    def std(self, marker: str) -> float:
        std = self.stds.get(marker)
        return 0.0 if std is None or not math.isfinite(std) else float(std)


# ---------------------------------------------------------------------------------------------- ranking


@dataclass(frozen=True)
class RankedEntry:
    """One candidate's places. ``rank`` is the geometry rank (1 = best; equal ranks are ties, numbered
    like sports results: 1, 1, 3); ``front`` its Pareto front; None where its markers are missing."""

    name: str
    rank: int | None
    front: int | None
    score: float | None
    id_accuracy_rank: int | None
    logme_rank: int | None
    disagrees_with_id_accuracy: bool
    disagrees_with_logme: bool
    missing: tuple[str, ...]


@dataclass(frozen=True)
class Ranking:
    """Entries in geometry order (unrankable candidates last), the three top picks, and the pairs that
    ID accuracy or LogME order the other way round from geometry (each pair as (geometry's better,
    geometry's worse))."""

    entries: tuple[RankedEntry, ...]
    pick: str | None
    id_accuracy_pick: str | None
    logme_pick: str | None
    id_accuracy_discordant: tuple[tuple[str, str], ...]
    logme_discordant: tuple[tuple[str, str], ...]

    @property
    def picks_agree(self) -> bool | None:
        """Whether geometry and ID accuracy pick the same candidate (None when either cannot pick)."""
        if self.pick is None or self.id_accuracy_pick is None:
            return None
        return self.pick == self.id_accuracy_pick


def geometry_score(dimension: float, utilization: float) -> float:
    """The tie-break within a Pareto front: D_eff · Ψ_eff.

    Both markers are non-negative and scale-free, and for positive values ordering by the product is
    ordering by log D_eff + log Ψ_eff: a 10% gain in either marker counts the same, so neither
    marker's units dominate the other's. Two candidates on one front trade one marker against the
    other; the product prefers the one whose relative gain is larger.
    """
    return dimension * utilization


def pareto_fronts(points: np.ndarray) -> np.ndarray:
    """Front index (0 = non-dominated) of each row of ``points`` (n, k), every column higher-is-better.

    Row a dominates row b when a >= b in every column and a > b in at least one. Front 0 is the rows no
    row dominates; front f+1 is those dominated only by rows of fronts <= f. O(n² k), fine for the
    handful of weights one compares.
    """
    n = len(points)
    geq = np.all(points[:, None, :] >= points[None, :, :], axis=2)
    gt = np.any(points[:, None, :] > points[None, :, :], axis=2)
    dominates = geq & gt  # dominates[a, b]: a dominates b
    fronts = np.full(n, -1, dtype=np.int64)
    remaining = np.ones(n, dtype=bool)
    front = 0
    while remaining.any():
        dominated = (dominates & remaining[:, None]).any(axis=0)
        current = remaining & ~dominated
        fronts[current] = front
        remaining &= ~current
        front += 1
    return fronts


def _competition_ranks(keys: Sequence[tuple[float, ...]]) -> list[int]:
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
    ranks = _competition_ranks([(r.value(marker) or 0.0,) for r in present])
    return {r.name: rank for r, rank in zip(present, ranks, strict=True)}


def _discordant(
    geometry: Mapping[str, tuple[float, float]], other: Mapping[str, int], order: Sequence[str]
) -> list[tuple[str, str]]:
    """Pairs geometry orders strictly one way and ``other`` strictly the other way."""
    pairs = []
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            if a in other and b in other and geometry[a] < geometry[b] and other[a] > other[b]:
                pairs.append((a, b))
    return pairs


def rank(records: Sequence[MarkerRecord]) -> Ranking:
    """Order candidates by the paper's rule, beside the orders ID accuracy and LogME give.

    Geometry order: Pareto front on (D_eff, Ψ_eff), both higher-is-better, then ``geometry_score``
    within a front; candidates with equal front and score tie (same rank). A candidate missing either
    marker cannot be placed and goes last with ``rank=None``. ID accuracy and LogME orders are plain
    descending sorts. A pair is discordant when geometry strictly prefers a over b and the other
    criterion strictly prefers b; each entry is flagged when it takes part in a discordant pair.
    """
    names = [r.name for r in records]
    if len(set(names)) != len(names):
        raise ValueError("candidate names must be unique")
    placed = [r for r in records if all(r.value(m) is not None for m in GEOMETRY)]
    points = np.array([[r.value(m) for m in GEOMETRY] for r in placed], dtype=np.float64).reshape(-1, 2)
    fronts = pareto_fronts(points) if len(placed) else np.zeros(0, dtype=np.int64)
    keys = {
        r.name: (float(fronts[i]), -geometry_score(points[i, 0], points[i, 1])) for i, r in enumerate(placed)
    }
    order = sorted(keys, key=lambda name: (keys[name], name))
    geometry_ranks = dict(zip(order, _competition_ranks([keys[n] for n in order]), strict=True))
    by_accuracy = _order_by(records, ID_ACCURACY)
    by_logme = _order_by(records, LOGME)
    acc_pairs = _discordant(keys, by_accuracy, order)
    logme_pairs = _discordant(keys, by_logme, order)
    acc_flagged = {name for pair in acc_pairs for name in pair}
    logme_flagged = {name for pair in logme_pairs for name in pair}
    by_name = {r.name: r for r in records}
    unplaced = sorted(n for n in names if n not in keys)
    entries = []
    for name in [*order, *unplaced]:
        record = by_name[name]
        entries.append(
            RankedEntry(
                name=name,
                rank=geometry_ranks.get(name),
                front=int(keys[name][0]) + 1 if name in keys else None,
                score=-keys[name][1] if name in keys else None,
                id_accuracy_rank=by_accuracy.get(name),
                logme_rank=by_logme.get(name),
                disagrees_with_id_accuracy=name in acc_flagged,
                disagrees_with_logme=name in logme_flagged,
                missing=tuple(m for m in (*GEOMETRY, ID_ACCURACY, LOGME) if record.value(m) is None),
            )
        )
    return Ranking(
        entries=tuple(entries),
        pick=_sole_best(geometry_ranks),
        id_accuracy_pick=_sole_best(by_accuracy),
        logme_pick=_sole_best(by_logme),
        id_accuracy_discordant=tuple(acc_pairs),
        logme_discordant=tuple(logme_pairs),
    )


def _sole_best(ranks: dict[str, int]) -> str | None:
    """The one candidate ranked first; None when nobody is ranked or the first place is shared."""
    first = [name for name, r in ranks.items() if r == 1]
    return first[0] if len(first) == 1 else None


# ---------------------------------------------------------------------------------------------- verdict


@dataclass(frozen=True)
class MarkerComparison:
    """One marker of the v1/v2 pair: ``difference`` = v2 − v1, ``noise`` the spread it must exceed,
    ``favours`` the side it supports (None when missing, tied or within the noise)."""

    marker: str
    v1: float | None
    v2: float | None
    v1_std: float
    v2_std: float
    difference: float | None
    noise: float
    favours: Side | None


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str
    comparisons: tuple[MarkerComparison, ...]


def _compare(marker: str, v1: MarkerRecord, v2: MarkerRecord) -> MarkerComparison:
    a, b = v1.value(marker), v2.value(marker)
    s1, s2 = v1.std(marker), v2.std(marker)
    noise = math.hypot(s1, s2)
    diff = None if a is None or b is None else b - a
    favours: Side | None = None
    if diff is not None and abs(diff) > noise:
        favours = "v2" if diff > 0 else "v1"
    return MarkerComparison(marker, a, b, s1, s2, diff, noise, favours)


def verdict(v1: MarkerRecord, v2: MarkerRecord) -> Verdict:
    """The paper's v1-vs-v2 decision: a side wins when BOTH D_eff and Ψ_eff are higher for it.

    With repeats, "higher" means higher by more than the noise: the margin |v2 − v1| must exceed
    sqrt(std_v1² + std_v2²), the standard deviation of the difference of two independent repeats
    (without repeats the stds are 0 and any strict difference counts). Otherwise ``undecided``, with
    the reason: a missing marker, an exact tie, a margin within the noise, or markers that disagree.
    """
    comparisons = tuple(_compare(m, v1, v2) for m in GEOMETRY)
    missing = [
        f"{c.marker} of {side}" for c in comparisons for side in ("v1", "v2") if getattr(c, side) is None
    ]
    if missing:
        return Verdict("undecided", f"missing marker(s): {', '.join(missing)}", comparisons)
    tied = [c.marker for c in comparisons if c.difference == 0]
    if tied:
        return Verdict("undecided", f"v1 and v2 tie on {' and '.join(tied)}", comparisons)
    noisy = [c for c in comparisons if c.favours is None]
    if noisy:
        detail = "; ".join(
            f"{c.marker}: |difference| {abs(c.difference or 0):.4g} <= noise {c.noise:.4g}" for c in noisy
        )
        return Verdict("undecided", f"within the noise of repeats ({detail})", comparisons)
    sides = {c.favours for c in comparisons}
    if len(sides) > 1:
        split = ", ".join(f"{c.marker} favours {c.favours}" for c in comparisons)
        return Verdict("undecided", f"the markers disagree ({split})", comparisons)
    side = comparisons[0].favours
    assert side is not None
    return Verdict(side, f"both dimension and utilization are higher for {side}", comparisons)


def accuracy_pick(v1_acc: float | None, v2_acc: float | None) -> Decision:
    """What "take the higher ImageNet acc@1" picks, for the side-by-side with the verdict."""
    if v1_acc is None or v2_acc is None or v1_acc == v2_acc:
        return "undecided"
    return "v1" if v1_acc > v2_acc else "v2"


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


@dataclass(frozen=True)
class RuleOutcome:
    rule: GateRule
    candidate: float | None
    baseline: float | None
    change: float | None
    relative_change: float | None
    passed: bool
    reason: str

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
            "reason": self.reason,
        }


@dataclass(frozen=True)
class GateResult:
    outcomes: tuple[RuleOutcome, ...]

    @property
    def passed(self) -> bool:
        """A gate passes when every rule passes (a gate with no rules passes vacuously)."""
        return all(o.passed for o in self.outcomes)

    @property
    def failures(self) -> tuple[RuleOutcome, ...]:
        return tuple(o for o in self.outcomes if not o.passed)


def _check(rule: GateRule, cand: float, base: float | None) -> tuple[bool, str]:
    t = rule.threshold
    if rule.kind == "min":
        return cand >= t, f"candidate {cand:.6g} {'>=' if cand >= t else '<'} {t:g}"
    if rule.kind == "max":
        return cand <= t, f"candidate {cand:.6g} {'<=' if cand <= t else '>'} {t:g}"
    if base is None:
        return False, "the baseline has no value for this metric"
    change = cand - base
    if rule.kind in ("max_drop", "max_rise"):
        moved = -change if rule.kind == "max_drop" else change
        what = "drop" if rule.kind == "max_drop" else "rise"
        return moved <= t, f"{what} {moved:.6g} {'<=' if moved <= t else '>'} {t:g}"
    if base == 0:
        return False, "relative change undefined: the baseline value is 0"
    relative = change / abs(base)
    moved = -relative if rule.kind == "max_relative_drop" else relative
    what = "relative drop" if rule.kind == "max_relative_drop" else "relative rise"
    return moved <= t, f"{what} {moved:.4%} {'<=' if moved <= t else '>'} {t:.4%}"


def evaluate_gate(candidate: MarkerRecord, baseline: MarkerRecord, rules: Sequence[GateRule]) -> GateResult:
    """Every rule with both values, the change and pass/fail. A candidate without a value for a rule's
    metric fails that rule: a gate fails closed, it never passes on missing evidence."""
    outcomes = []
    for rule in rules:
        cand, base = candidate.value(rule.metric), baseline.value(rule.metric)
        change = None if cand is None or base is None else cand - base
        relative = None if change is None or not base else change / abs(base)
        if cand is None:
            passed, reason = False, "the candidate has no value for this metric"
        else:
            passed, reason = _check(rule, cand, base)
        outcomes.append(RuleOutcome(rule, cand, base, change, relative, passed, reason))
    return GateResult(tuple(outcomes))
