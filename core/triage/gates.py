"""CI-gate rules (``metric: kind threshold``), parsed and evaluated on a candidate against a baseline,
each beyond the noise where the metric has one."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from zootriage.core.noise import NO_NOISE_ESTIMATE, TEST, Estimate, combined, interval
from zootriage.core.triage.records import (
    MarkerRecord,
)

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
