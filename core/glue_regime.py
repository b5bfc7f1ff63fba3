"""Whether a GLUE analysis is in its valid regime, or its markers come from degenerate anchors.

GLUE's inner problem projects t onto the cone K_y = {v : y_μ⟨v, x⟩ ≥ 0 for every point x of every
manifold μ}. When the dichotomy y is linearly separable through the origin, K_y has a non-empty
interior and N(t) = ‖t − Π_K t‖² is a genuine critical dimension. When it is not (typical once the
n = P·M points outnumber the feature dimension, e.g. 10 × 50 points of 64-d features after global
centring), K_y lies in a proper subspace; for every t the projection then loses at least the part of
t orthogonal to that subspace, and in the extreme K_y = {0}: v* = 0, N(t) = ‖t‖² whose mean is the
rank r of the data. Capacity then sticks at P / r and the anchors that define D_eff, R_eff and Ψ_eff
are whatever the solver ends on, not properties of the manifolds.

Two measurements detect it:

* ``separable_fraction``: the drawn dichotomies are tested for strict separability through the
  origin, y_μ⟨w, x⟩ ≥ 1 for all points (an LP, ``core.capacity_sim.separable``). Only distinct
  dichotomies are tested (one-vs-rest has at most P), each weighted by how often it was drawn.
* ``saturated_fraction``: the fraction of draws with ‖v*‖² ≤ SATURATION_RTOL · ‖t‖², i.e. N(t) = ‖t‖²:
  t met no separating direction at all.

The rule: a result is degenerate when any drawn dichotomy is not separable (then a positive share of
the draws is computed on a collapsed cone; nothing bounds how much that biases every marker), or when
more than SATURATED_MAX of the draws saturate. For a separable dichotomy v* = 0 only when t lies in
the polar cone of K_y; a polar cone covering more than half of all directions means K_y is thinner
than a half-space's worth of directions on the other side, so the markers are dominated by draws that
carry no anchor geometry. Degenerate results are reported, never decided on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zootriage.core.capacity_sim import separable

SATURATION_RTOL = 1e-9
SATURATED_MAX = 0.5


@dataclass(frozen=True)
class Regime:
    """How far one analysis is from the degenerate regime (see the module docstring).

    ``n_points`` and ``rank`` are n and r = min(N, n) of the preprocessed points; ``reason`` says why
    ``degenerate`` holds and is None otherwise.
    """

    separable_fraction: float
    saturated_fraction: float
    n_points: int
    rank: int
    degenerate: bool
    reason: str | None


def separable_fraction(points: np.ndarray, classes: np.ndarray, labels: np.ndarray) -> float:
    """Share of the draws whose dichotomy (rows of ``labels`` (n_t, P), ±1) is strictly separable
    through the origin by some w: y_μ(i)⟨w, x_i⟩ ≥ 1 for every point. Each distinct dichotomy is
    tested once by LP and counted as often as it was drawn."""
    distinct, counts = np.unique(labels, axis=0, return_counts=True)
    hits = sum(int(c) for y, c in zip(distinct, counts, strict=True) if separable(points, y[classes]))
    return hits / labels.shape[0]


def saturated_fraction(t: np.ndarray, v: np.ndarray) -> float:
    """Share of the draws t_k (rows) whose projection v*_k onto the cone is zero: N(t_k) = ‖t_k‖²."""
    return float(np.mean(np.sum(v * v, axis=1) <= SATURATION_RTOL * np.sum(t * t, axis=1)))


def judge(separable: float, saturated: float, n_points: int, rank: int) -> Regime:
    """Apply the rule of the module docstring."""
    reasons = []
    if separable < 1.0:
        reasons.append(
            f"{1.0 - separable:.0%} of the drawn dichotomies are not linearly separable through the "
            f"origin (n = {n_points} points in rank {rank})"
        )
    if saturated > SATURATED_MAX:
        reasons.append(f"{saturated:.0%} of the draws found no separating direction (N(t) = ‖t‖²)")
    return Regime(separable, saturated, n_points, rank, bool(reasons), "; ".join(reasons) or None)


def combine(regimes: list[Regime]) -> Regime:
    """One regime for several repeats: mean fractions, degenerate when any repeat is."""
    sep = float(np.mean([r.separable_fraction for r in regimes]))
    sat = float(np.mean([r.saturated_fraction for r in regimes]))
    bad = [r for r in regimes if r.degenerate]
    first = regimes[0]
    reason = f"{bad[0].reason} (in {len(bad)} of {len(regimes)} repeats)" if bad else None
    return Regime(sep, sat, first.n_points, first.rank, bool(bad), reason)
