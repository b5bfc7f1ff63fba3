"""CI-gate rules (``metric: kind threshold``), parsed and evaluated on a candidate against a baseline.

A gate answers the question CI asks: "is the candidate no worse than the baseline, beyond the
noise?". Each rule is a one-sided claim S ≤ δ about a statistic S and its threshold δ (for the
change kinds, δ is the rule's margin):

    min t:              S = −candidate,                     δ = −t
    max t:              S = candidate,                      δ = t
    max_drop t:         S = baseline − candidate,           δ = t
    max_rise t:         S = candidate − baseline,           δ = t
    max_relative_*  t:  the same change divided by |baseline|, δ = t

Every marker carries its standard error sᵢ/√Rᵢ (std over Rᵢ repeats, ``core.noise``); the estimate
Ŝ = Σ cᵢ·Xᵢ has se² = Σ cᵢ² sᵢ²/Rᵢ (the delta method's cᵢ for the relative kinds) with
Welch–Satterthwaite df ν. With α = 1 − CONFIDENCE = 0.05, q = t_{1−α,ν} and the one-sided bounds
L = Ŝ − q·se, U = Ŝ + q·se (a two-sided 90% interval, as in TOST):

* **passed** when U ≤ δ: the claim is shown by a one-sided t-test at level α (non-inferiority; the
  two one-sided tests of TOST, of which a ``max_drop`` rule needs only the one toward worse). If in
  truth S ≥ δ, P(passed) ≤ α.
* **failed** when L > δ: the claim's negation is shown at level α (if in truth S ≤ δ, P(failed) ≤ α);
  or, for a change rule with a margin δ > 0, when U > δ although the test resolves the margin,
  2·q·se ≤ δ: the margin is at least the smallest shift that a level-α test tells from no change
  with power 1 − α. An unchanged candidate (true S = 0) then passes with probability
  P(Ŝ + q·se ≤ δ) ≥ P(Ŝ ≤ q·se) = 1 − α, so it fails at most α of the time, and a candidate worse
  than the margin passes at most α of the time.
* **inconclusive** otherwise: the noise is larger than the margin (2·q·se > δ) and δ lies inside
  [L, U]. Standard errors shrink as 1/√R: with R′ repeats on both runs, se′² = V/R′ with
  V = Σ cᵢ² sᵢ² = Σ Rᵢ·(cᵢ·seᵢ)², so R′ = ⌈V·(2q/δ)²⌉ repeats resolve the margin (q kept at its
  present, larger value: conservative). An absolute rule (``min``/``max``, no "unchanged" point) or
  a margin δ ≤ 0 has no such resolution; R′ = ⌈V·(q/|δ − Ŝ|)²⌉ would decide at the present estimate.
  Where the repeats share images (overlapping noise: a class smaller than R·m, ``core.glue_subsets``)
  the standard error is s·√(f/(1 − f)) with f = m/M, whatever R: more repeats do not shrink it, so the
  advice is more images per class (R′·m of them makes R′ repeats disjoint), not more repeats.

A metric without a noise estimate, or from a degenerate GLUE regime, is inconclusive; a candidate
without a value fails (a gate fails closed).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from zootriage.core.noise import (
    ALPHA,
    GATE_TEST,
    NO_NOISE_ESTIMATE,
    OVERLAPPING,
    Estimate,
    combined,
    upper_quantile,
)
from zootriage.core.protocol import REPEATS_MAX
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
      (a baseline of 0 makes the relative change undefined: the rule is inconclusive, since nothing
      shows the candidate worse, and says to use the absolute kind).
    """

    metric: str
    kind: GateKind
    threshold: float

    @property
    def absolute(self) -> bool:
        """``min``/``max``: the candidate against the threshold alone; the baseline is not read."""
        return self.kind in ("min", "max")

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
    test: str = GATE_TEST

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


@dataclass(frozen=True)
class _Measured:
    """A rule's statistic as shown (``value``, the candidate or its drop/rise) with its standard error,
    df, and V = Σ Rᵢ·(cᵢ·seᵢ)², the variance of one repeat (module docstring); None without noise."""

    value: float
    se: float | None
    df: float
    per_repeat: float | None


def _measured(kind: str, cand: Estimate, base: Estimate | None, repeats: tuple[int, int]) -> _Measured:
    """The rule's statistic (delta method for the relative kinds) with its noise (``core.noise``)."""
    if kind in ("min", "max"):
        value, parts = cand.value, [(1.0, cand, repeats[0])]
    else:
        assert base is not None
        sign = -1.0 if kind in ("max_drop", "max_relative_drop") else 1.0
        value = sign * (cand.value - base.value)
        if kind in ("max_drop", "max_rise"):
            coefficients = (sign, -sign)
        else:  # S = sign·(c − b)/|b|: ∂S/∂c = sign/|b|, ∂S/∂b = −sign·c/(b·|b|)
            scale = abs(base.value)
            try:
                value /= scale
                coefficients = (sign / scale, -sign * cand.value / (base.value * scale))
            except (OverflowError, ZeroDivisionError):  # |b| so small that b·|b| is 0 in floating point
                return _Measured(math.nan, None, math.inf, None)
        parts = [(coefficients[0], cand, repeats[0]), (coefficients[1], base, repeats[1])]
    se, df = combined([(c, e) for c, e, _ in parts])
    if se is None:
        return _Measured(value, None, df, None)
    return _Measured(value, se, df, sum(r * (c * (e.se or 0.0)) ** 2 for c, e, r in parts))


def _repeats_needed(per_repeat: float, q: float, gap: float, overlapping: bool) -> str:
    """R′ = ⌈V·(q/gap)²⌉, the repeats on both runs at which q·se′ = gap (module docstring); with
    ``overlapping`` repeats, the images per class that make R′ repeats disjoint."""
    if gap <= 0:
        return "the estimate sits on the threshold: no number of repeats decides; change the rule"
    needed = math.ceil(per_repeat * (q / gap) ** 2)
    if needed > REPEATS_MAX:
        return f"it would take {needed} repeats on both runs (at most {REPEATS_MAX}): widen the margin"
    if overlapping:
        images = max(needed, 2)
        return (
            "the repeats share images (overlapping noise), so more repeats do not shrink it: extract at "
            f"least {images} × points_per_class images per class on both runs, where about {images} "
            "disjoint repeats would decide"
        )
    return f"{needed} repeats on both runs (se ∝ 1/√repeats) would decide"


def _check(
    rule: GateRule, cand: Estimate, base: Estimate | None, repeats: tuple[int, int], overlapping: bool = False
) -> tuple[GateStatus, str, tuple[float, float] | None]:
    """The non-inferiority decision of the module docstring."""
    if not rule.absolute:
        if base is None:
            return "failed", "the baseline has no value for this metric", None
        if rule.kind.startswith("max_relative") and base.value == 0:
            absolute = rule.kind.replace("_relative", "")
            return "inconclusive", f"relative change undefined: the baseline value is 0; use {absolute}", None
    what = _STATISTIC[rule.kind]
    m = _measured(rule.kind, cand, base, repeats)
    relative = rule.kind.startswith("max_relative")
    fmt = (lambda v: f"{v:.4%}") if relative else (lambda v: f"{v:.6g}")
    at_least = rule.kind == "min"
    allowed = ">=" if at_least else "<="
    if m.se is None or not math.isfinite(m.value):
        used = repeats[:1] if rule.absolute else repeats
        how = (
            "score with --repeats 2 or more (and repeats × points_per_class images per class) to measure it"
            if min(used) < 2
            else "the repeats' spread measured none (the same value on every repeat, or none stored): "
            "score with more images per class"
        )
        shown = f"{what} {fmt(m.value)} vs {fmt(rule.threshold)}"
        return "inconclusive", f"{shown}: {NO_NOISE_ESTIMATE}; {how}", None
    q = upper_quantile(ALPHA, m.df)
    lo, hi = m.value - q * m.se, m.value + q * m.se
    sign = -1.0 if at_least else 1.0  # the claim is sign·value ≤ sign·threshold
    stat, delta = sign * m.value, sign * rule.threshold
    upper, lower = stat + q * m.se, stat - q * m.se
    shown = f"{what} {fmt(m.value)}" + (f" [90% CI {fmt(lo)}, {fmt(hi)}]" if m.se > 0 else "")
    if upper <= delta:
        return "passed", f"{shown} {allowed} {fmt(rule.threshold)} beyond the noise", (lo, hi)
    if lower > delta:
        return "failed", f"{shown}: worse than {fmt(rule.threshold)} beyond the noise", (lo, hi)
    resolution = 2.0 * q * m.se
    margin = not rule.absolute and delta > 0
    if margin and resolution <= delta:
        return (
            "failed",
            f"{shown}: not shown {allowed} {fmt(rule.threshold)}, although the test resolves this margin "
            f"(2·q·se = {fmt(resolution)}): an unchanged model would pass",
            (lo, hi),
        )
    assert m.per_repeat is not None
    if margin:
        more = _repeats_needed(m.per_repeat, 2.0 * q, delta, overlapping)
        why = f"the noise (2·q·se = {fmt(resolution)}) is larger than the margin {fmt(rule.threshold)}"
    else:
        more = _repeats_needed(m.per_repeat, q, abs(delta - stat), overlapping)
        why = f"the interval contains the threshold {fmt(rule.threshold)}"
    return "inconclusive", f"{shown}: {why}; {more}", (lo, hi)


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
        read = (candidate,) if rule.absolute else (candidate, baseline)  # the records the rule reads
        degenerate = next((r.undecidable[rule.metric] for r in read if rule.metric in r.undecidable), None)
        if cand is None:
            status: GateStatus = "failed"
            reason = "the candidate has no value for this metric"
        elif degenerate:
            status, reason = "inconclusive", f"not decidable: {degenerate}"
        else:
            overlapping = any(r.notes.get(rule.metric, "").startswith(OVERLAPPING) for r in read)
            status, reason, interval_ = _check(
                rule, cand, base, (candidate.repeats, baseline.repeats), overlapping
            )
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
