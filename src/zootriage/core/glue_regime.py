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
  origin, y_μ⟨w, x⟩ ≥ 1 for all points. Only distinct dichotomies are tested (one-vs-rest has at
  most P), each weighted by how often it was drawn. The draws' own solutions certify most of them
  without an LP (``certify``); the rest go to the LP (``core.capacity_sim.separable``), whose cost
  (n constraints in r unknowns) dominated every other stage at P ≥ 200.
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
import torch

from zootriage.core.capacity_sim import separable
from zootriage.core.nnls import solve_batched
from zootriage.core.threads import single_threaded

SATURATION_RTOL = 1e-9
SATURATED_MAX = 0.5
# A certificate's margins y_i⟨w, x_i⟩ must exceed this fraction of ‖w‖·‖x_i‖ (rounding is ~1e-13);
# a "zero" projection for the non-separability certificate is ‖v‖ ≤ ZERO_RTOL · ‖t‖.
MARGIN_RTOL = 1e-9
ZERO_RTOL = 1e-9
# Dichotomies per block of the margins product (n × block doubles).
_BLOCK = 64


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


def separable_fraction(
    points: np.ndarray,
    classes: np.ndarray,
    labels: np.ndarray,
    t: np.ndarray | None = None,
    v: np.ndarray | None = None,
) -> float:
    """Share of the draws whose dichotomy (rows of ``labels`` (n_t, P), ±1) is strictly separable
    through the origin by some w: y_μ(i)⟨w, x_i⟩ ≥ 1 for every point. Each distinct dichotomy is
    decided once and counted as often as it was drawn: by the certificates of ``certify`` when the
    draws t (n_t, r) and their projections v* (n_t, r) are given, else (and when no certificate
    holds) by the LP."""
    distinct, inverse, counts = np.unique(labels, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    verdicts: list[bool | None] = [None] * distinct.shape[0]
    if t is not None and v is not None:
        verdicts = certify(points, classes, distinct, inverse, t, v)
    hits = 0
    for j, (y, c) in enumerate(zip(distinct, counts, strict=True)):
        known = verdicts[j]
        if known if known is not None else separable(points, y[classes]):
            hits += int(c)
    return hits / labels.shape[0]


def certify(
    points: np.ndarray,
    classes: np.ndarray,
    distinct: np.ndarray,
    inverse: np.ndarray,
    t: np.ndarray,
    v: np.ndarray,
) -> list[bool | None]:
    """Decide the distinct dichotomies (rows of ``distinct``; draw k has dichotomy ``inverse[k]``)
    from the draws' projections where a certificate exists: True (separable), False (not), None (no
    certificate: the LP decides). With z_i = y_μ(i) x_i:

    * Separable. Every v*_k lies in the cone K_y = {w : ⟨w, z_i⟩ ≥ 0}, so does w₀ = Σ_k v*_k over
      the draws of y, and its margins ⟨w₀, z_i⟩ are zero only on the tight set T. If T is empty, w₀
      separates strictly. Else the least-norm d with ⟨d, z_i⟩ = 1 on T (it exists when the z_T are
      independent, as Lawson–Hanson's passive sets are) lifts them: w = w₀ + εd with
      ε = ½ min {m_i / |⟨d, z_i⟩| : i ∉ T, ⟨d, z_i⟩ < 0} keeps every other margin positive. The
      certificate is the check itself: every margin of w above MARGIN_RTOL · ‖w‖ ‖x_i‖.
    * Not separable (Gordan: some λ ≥ 0, λ ≠ 0 has Σ λ_i z_i = 0). A draw with v* = 0 has
      t = Aλ₁ (A's columns −z_i); if the projection of −t is zero too, −t = Aλ₂ and A(λ₁ + λ₂) = 0.
      That is the whole story when K_y = {0} (every draw saturates), the usual degenerate case.

    Cost: one (n × D) margins product, a small least-norm solve per dichotomy with a tight set, and
    one batched NNLS of the negated draws: O(n·r·D), against D LPs of n constraints in r unknowns.
    """
    # torch with one CPU thread (core.threads): numpy's threaded BLAS took 8× longer on a loaded machine.
    pts, tt, vv = (torch.from_numpy(np.ascontiguousarray(a)) for a in (points, t, v))
    # Labels per point (±1) are made per block of dichotomies: all D × n of them are 0.25 GB at P = 1000.
    labels = torch.from_numpy(distinct)  # (D, P)
    cls = torch.from_numpy(classes)
    with single_threaded(torch.device("cpu")):
        norms = pts.norm(dim=1).clamp(min=torch.finfo(pts.dtype).tiny)  # a zero point: margin 0, tight
        w0 = torch.zeros((distinct.shape[0], pts.shape[1]), dtype=pts.dtype)
        w0.index_add_(0, torch.from_numpy(inverse), vv)
        out: list[bool | None] = [None] * distinct.shape[0]
        for start in range(0, distinct.shape[0], _BLOCK):
            block = slice(start, start + _BLOCK)
            for j, verdict in enumerate(_separated(pts, norms, labels[block][:, cls], w0[block])):
                if verdict:
                    out[start + j] = True
        zero = vv.square().sum(dim=1) <= ZERO_RTOL**2 * tt.square().sum(dim=1)
        firsts = []
        for j in (j for j in range(len(out)) if out[j] is None):
            mine = (zero & (torch.from_numpy(inverse) == j)).nonzero()
            if mine.numel():
                firsts.append(int(mine[0, 0]))
        if firsts:
            signs = -labels[inverse[firsts]][:, cls]
            minus_t = -tt[firsts]
            lam, ok = solve_batched(pts, signs, minus_t)
            v_minus = minus_t - (signs * lam) @ pts
            gone = ok & (v_minus.square().sum(dim=1) <= ZERO_RTOL**2 * minus_t.square().sum(dim=1))
            for k, done in zip(firsts, gone.tolist(), strict=True):
                if done:
                    out[int(inverse[k])] = False
    return out


def _separated(points: torch.Tensor, norms: torch.Tensor, y: torch.Tensor, w0: torch.Tensor) -> list[bool]:
    """For a block of dichotomies (labels ``y`` (b, n), cone points ``w0`` (b, r)): whether w₀, or else
    w₀ + εd (``certify``), separates the points strictly. Three products with the points for the whole
    block, (b, r) × (r, n) each: at P = 1000 the points are 0.8 GB, and reading them three times per
    dichotomy made this the slowest stage after the solver (86 of the 380 s at n_t = 1000)."""
    # Margins relative to ‖x_i‖ (rows of (b, n), products scaled in place: each is 25 MB at P = 1000).
    margins = (w0 @ points.T).mul_(y).div_(norms)
    tight = margins <= MARGIN_RTOL * w0.norm(dim=1)[:, None]
    strict = (~tight.any(dim=1)).tolist()
    lifts = torch.zeros_like(w0)
    liftable = [not strict[j] and int(tight[j].sum()) <= points.shape[1] for j in range(len(strict))]
    for j in (j for j, ok in enumerate(liftable) if ok):
        z = y[j, tight[j], None] * points[tight[j]]
        ones = torch.ones((z.shape[0], 1), dtype=z.dtype)
        lifts[j] = torch.linalg.lstsq(z, ones, driver="gelsd").solution[:, 0]
    if not any(liftable):
        return strict
    lift = (lifts @ points.T).mul_(y).div_(norms)  # ⟨d, z_i⟩ / ‖x_i‖
    eps = torch.ones(len(strict), dtype=w0.dtype)
    for j in (j for j, ok in enumerate(liftable) if ok):
        down = ~tight[j] & (lift[j] < 0)
        if bool(down.any()):
            eps[j] = 0.5 * (margins[j, down] / -lift[j, down]).min()
    del margins, lift, tight
    # The certificate is the check itself, on w = w₀ + εd's own margins.
    w = w0 + eps[:, None] * lifts
    margins_w = (w @ points.T).mul_(y).div_(norms)
    strict_w = (margins_w > MARGIN_RTOL * w.norm(dim=1)[:, None]).all(dim=1).tolist()
    return [s or (ok and sw) for s, ok, sw in zip(strict, liftable, strict_w, strict=True)]


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
