"""Decisions beyond the noise: every triage comparison states its test, its confidence and p.

A GLUE marker stored for a run is the mean over R independent repeats (each its own class
subsample and Gaussian draws), with the standard deviation s over the repeats. Its standard error is
s / √R with R − 1 degrees of freedom. Two runs differ on a marker beyond the noise when a two-sided
Welch t-test rejects equal means at CONFIDENCE:

    d = m₂ − m₁,  se² = s₁²/R₁ + s₂²/R₂,  t = d / se,
    ν = se⁴ / ((s₁²/R₁)²/(R₁ − 1) + (s₂²/R₂)²/(R₂ − 1))   (Welch–Satterthwaite),
    p = 2 · P(T_ν > |t|).

Markers outside GLUE (ID accuracy, LogME, ...) carry the same kind of std: their spread over the
very subsets of images the GLUE repeats use (``core.markers.compute``), so that every marker's
standard error is std/√R. A marker without a std (a single repeat, repeats that share all their
points, a run stored before every marker had one) has no noise estimate (se None): it never decides.
Nor does a std of 0 over R ≥ 2 repeats: every marker is a function of sampled images, so a spread of
0 says the repeats could not show the noise (a rank capped by the subsets' size, a proportion that
made no error on any subset), not that there is none; taking it as exact made every difference
"beyond the noise" with p = 0. A sum whose noise cannot be computed in floating point (values near
the largest doubles) has no estimate either.
Relative changes use the delta method, se(c/b − 1) ≈ √(se_c² + (c/b)² se_b²) / |b|.

CI gates ask another question, "is the candidate no worse than the baseline?", and answer it with a
non-inferiority test against the rule's margin (``core.triage.gates``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType

CONFIDENCE = 0.95
TEST = f"two-sided Welch t-test on repeat means at {CONFIDENCE:.0%}"
ALPHA = 1.0 - CONFIDENCE  # the level of each one-sided test of a CI gate (core.triage.gates)
GATE_TEST = f"non-inferiority against each rule's margin: one-sided Welch t-tests at α = {ALPHA:.2g} (TOST)"
# How the stored reason of a marker from overlapping repeats begins (written by core.glue_subsets, read
# by core.triage.gates): their standard error does not shrink with more repeats.
OVERLAPPING = "overlapping noise"
NO_NOISE_ESTIMATE = "no noise estimate (repeats=1, none stored, or no spread over the repeats)"


@dataclass(frozen=True)
class Estimate:
    """A marker value with its standard error ``se`` and degrees of freedom ``df`` (inf: exact).
    ``se`` None means the value has noise that was not measured (a single repeat, or no std stored)."""

    value: float
    se: float | None
    df: float

    @classmethod
    def from_repeats(cls, value: float, std: float | None, repeats: int) -> Estimate:
        """std/√R with R − 1 df; no estimate without a positive, finite std over two or more repeats
        (module docstring)."""
        if std is None or repeats < 2 or not math.isfinite(std) or std <= 0.0:
            return cls(value, None, math.inf)
        return cls(value, std / math.sqrt(repeats), float(repeats - 1))


@dataclass(frozen=True)
class Difference:
    """second − first, its standard error and the test's p (None without a noise estimate);
    ``significant`` when p < 1 − CONFIDENCE."""

    difference: float
    se: float | None
    p_value: float | None

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < 1.0 - CONFIDENCE

    def reason(self) -> str:
        if self.p_value is None:
            return NO_NOISE_ESTIMATE
        return f"difference {self.difference:.4g} ± {self.se or 0.0:.2g} (p={self.p_value:.3g})"


def _welch_df(parts: list[tuple[float, float]]) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of variances (variance, df) pairs."""
    total = sum(v for v, _ in parts)
    denom = sum(v * v / df for v, df in parts if math.isfinite(df) and v > 0)
    df = math.inf if denom == 0 else total * total / denom
    return df if math.isfinite(df) else math.inf


def combined(parts: list[tuple[float, Estimate]]) -> tuple[float | None, float]:
    """Standard error and Welch df of Σ cᵢ·Xᵢ for independent estimates Xᵢ (None: one is unmeasured,
    or the sum's noise is not a finite positive number in floating point)."""
    if any(e.se is None for _, e in parts):
        return None, math.inf
    try:
        variances = [((c * (e.se or 0.0)) ** 2, e.df) for c, e in parts]
        se, df = math.sqrt(sum(v for v, _ in variances)), _welch_df(variances)
    except (OverflowError, ZeroDivisionError):
        return None, math.inf
    if not math.isfinite(se) or se <= 0.0:
        return None, math.inf
    return se, df


def compare(first: Estimate, second: Estimate) -> Difference:
    """The Welch test of the module docstring on second − first."""
    diff = second.value - first.value
    se, df = combined([(1.0, second), (-1.0, first)])
    if se is None or not math.isfinite(diff):
        return Difference(diff, None, None)
    if math.isinf(df):  # the normal tail, 2·(1 − Φ(|z|)) = erfc(|z|/√2): no scipy for exact-df estimates
        return Difference(diff, se, math.erfc(abs(diff) / se / math.sqrt(2.0)))
    p = 2.0 * float(_scipy_stats().t.sf(abs(diff) / se, df))
    return Difference(diff, se, p)


def upper_quantile(alpha: float, df: float) -> float:
    """q with P(T_df > q) = alpha: Student's t with ``df`` degrees of freedom, the normal for df = ∞."""
    stats = _scipy_stats()
    return float(stats.t.ppf(1.0 - alpha, df)) if math.isfinite(df) else float(stats.norm.ppf(1.0 - alpha))


def _scipy_stats() -> ModuleType:
    """``scipy.stats``, imported by the first test that computes a tail, not with this module: the API
    imports the triage rules at start for their names and types, and needs the distributions only
    when a request asks for a decision (the one place in ``core.noise`` and ``core.triage`` that does)."""
    from scipy import stats

    return stats
