"""The v1-vs-v2 verdict: which of two weights of one architecture the rule prefers beyond the noise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zootriage.core.noise import NO_NOISE_ESTIMATE, compare
from zootriage.core.triage.published import published_accuracy
from zootriage.core.triage.records import GEOMETRY_RULE, MarkerRecord, Rule

Side = Literal["v1", "v2"]
Decision = Literal["v1", "v2", "undecided"]


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
    """What "take the higher ImageNet acc@1" picks, for the side-by-side with the verdict: the higher
    published acc@1 (percent) beyond the noise of its 50,000 validation images (the binomial standard
    errors of ``core.triage.published``, the same test as every verdict), else undecided."""
    first, second = published_accuracy(v1_acc), published_accuracy(v2_acc)
    if first is None or second is None:
        return "undecided"
    diff = compare(first, second)
    if not diff.significant:
        return "undecided"
    return "v2" if diff.difference > 0 else "v1"
