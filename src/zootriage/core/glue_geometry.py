"""From the NNLS solutions of all draws to anchor points and the effective manifold geometry.

Notation of docs/method.md: draw k has multipliers λ_k ≥ 0 over the n points; manifold μ is active
when w_μ(k) = Σ_{i∈μ} λ_{k,i} > tol and then has the anchor s_μ(k) = Σ_{i∈μ} λ_{k,i} x_i / w_μ(k).

* anchor centre   s⁰_μ = mean of s_μ(k) over the draws where μ is active;
* axis part       s¹_μ(k) = s_μ(k) − s⁰_μ;
* over the active set A_k: G⁰ = S⁰S⁰ᵀ, G¹ = S¹S¹ᵀ, t¹ = S¹ t_k and
      a_k = t¹ᵀ (G¹)⁺ t¹,   b_k = t¹ᵀ (G⁰ + G¹)⁺ t¹;
* D_eff = mean(a)/P, R_eff = sqrt(mean(b) / mean(a − b)), Ψ_eff = mean(b) / N_crit;
* alignments, each a mean of |cos| pooled over all (draw, pair) items, so a draw with many active
  manifolds weighs more: axis_alignment over unordered pairs μ ≠ ν of A_k (s¹_μ(k), s¹_ν(k)),
  center_axis_alignment over ordered pairs (s⁰_μ, s¹_ν(k)), and center_alignment over the pairs of
  classes with a centre; vectors of zero length (a class that is a single point) have no direction
  and are left out.

Since N_crit = P·D_eff / (Ψ_eff (1 + R_eff⁻²)) holds exactly, capacity α = P / N_crit equals
Ψ_eff (1 + R_eff⁻²) / D_eff. Everything is computed from the support of λ, over each draw's active
manifolds, in chunks of draws, so that memory stays bounded by chunk × |A| × r (|A| ≤ |S| ≪ P at
scale), on whatever device the inputs live.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch

from zootriage.core.threads import run_all

# Relative cut-off of the pseudo-inverses and of "active" (w_μ against the largest w over all draws).
PINV_RTOL = 1e-10
ACTIVE_RTOL = 1e-12
# Squared norms (and eigenvalues) below this count as zero; the points have unit RMS norm.
NORM_FLOOR = 1e-20
# Entries of one chunk's (draws × slots × r) tensors: 2 MB, so they stay in cache and below the
# allocator's mmap threshold (a fresh 64 MB tensor per chunk page-faults its way in, 2× slower).
_CHUNK_ELEMENTS = 1 << 18


@dataclass(frozen=True)
class Geometry:
    """Effective geometry of one analysis (means over the draws)."""

    dimension: float
    radius: float
    utilization: float
    center_alignment: float
    axis_alignment: float
    center_axis_alignment: float
    center_norm: float


def anchor_coefficients(
    lam: torch.Tensor, classes: torch.Tensor, n_classes: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Convex weights λ_{k,i} / w_μ(i)(k) as (n_t, n) (zero for inactive manifolds) and the (n_t, P)
    active mask, with w_μ(k) = Σ_{i∈μ} λ_{k,i} and "active" meaning w_μ(k) > ACTIVE_RTOL · max w."""
    w = torch.zeros((lam.shape[0], n_classes), dtype=lam.dtype, device=lam.device)
    w.index_add_(1, classes, lam)
    active = w > ACTIVE_RTOL * (w.max() if w.numel() else 0.0)
    coeff = lam / torch.where(active, w, torch.ones_like(w))[:, classes] * active[:, classes]
    return coeff, active


def anchor_points(
    points: torch.Tensor, classes: torch.Tensor, n_classes: int, coeff: torch.Tensor
) -> torch.Tensor:
    """Anchor points s_μ(k) = Σ_{i∈μ} coeff_{k,i} x_i as (n_t, P, r); zero for inactive μ."""
    out = torch.zeros((coeff.shape[0], n_classes, points.shape[1]), dtype=coeff.dtype, device=coeff.device)
    for mu in range(n_classes):
        members = (classes == mu).nonzero(as_tuple=True)[0]
        out[:, mu] = coeff[:, members] @ points[members]
    return out


def bag_sums(
    keys: torch.Tensor, index: torch.Tensor, weights: torch.Tensor, table: torch.Tensor, n_bags: int
) -> torch.Tensor:
    """Σ weights[e] · table[index[e]] over the entries e of each bag, (n_bags, table columns): the
    entries' bag ids ``keys`` must be sorted, in 0..n_bags−1; an empty bag gives a zero row. One
    ``embedding_bag`` call, no (entries, columns) temporary."""
    offsets = torch.searchsorted(keys, torch.arange(n_bags, device=keys.device))
    return torch.nn.functional.embedding_bag(index, table, offsets, mode="sum", per_sample_weights=weights)


def _quad_pinv(gram: torch.Tensor, vec: torch.Tensor) -> torch.Tensor:
    """vᵀ G⁺ v for a batch of symmetric PSD G.

    Eigenvalues below PINV_RTOL·λ_max, or below the absolute floor NORM_FLOOR (the points have unit
    RMS norm, so this is relative to the data's scale), count as zero: without the floor, a batch
    whose G is pure rounding noise (every active class a single point) would be inverted as signal.
    """
    evals, evecs = torch.linalg.eigh(gram)
    cut = torch.clamp(PINV_RTOL * evals.amax(dim=-1, keepdim=True), min=NORM_FLOOR)
    keep = evals > cut
    inv = torch.where(keep, 1.0 / torch.where(keep, evals, torch.ones_like(evals)), 0.0)
    proj = torch.einsum("bpq,bp->bq", evecs, vec)
    return (proj.square() * inv).sum(dim=-1)


def _abs_cos(dots: torch.Tensor, sq_rows: torch.Tensor, sq_cols: torch.Tensor) -> torch.Tensor:
    """|cos| from inner products and squared norms (entries without a direction give 0)."""
    denom = torch.sqrt(
        sq_rows.clamp(min=NORM_FLOOR)[..., :, None] * sq_cols.clamp(min=NORM_FLOOR)[..., None, :]
    )
    return (dots / denom).abs()


def radius_of(mean_a: float, mean_b: float) -> float:
    """R_eff = sqrt(E[b] / E[a − b]); 0 when E[b] = 0, ∞ when the gap vanishes (relative 1e-12)."""
    gap = mean_a - mean_b
    if mean_b <= 0.0:
        return 0.0
    if gap <= 1e-12 * mean_a:
        return math.inf
    return math.sqrt(mean_b / gap)


def effective_geometry(
    points: torch.Tensor,
    classes: torch.Tensor,
    n_classes: int,
    t: torch.Tensor,
    lam: torch.Tensor,
    n_crit: float,
    workers: int = 1,
    beside: Callable[[], object] | None = None,
) -> Geometry:
    """The markers of the module docstring from the draws t (n_t, r) and their solutions λ (n_t, n).

    ``points`` must have unit RMS norm (as :func:`core.glue.preprocess` leaves them). Only the
    support of λ is touched (|S| ≈ N(t) points per draw, not n) and each draw's matrices are over
    its active manifolds only (|A_k| ≤ |S|, not P): draw k's active classes sit in compact slots
    0..|A_k|−1, padded with zero rows that the pseudo-inverses and the pair masks ignore. So time
    is O(n_t·|S|·r + n_t·|A|³) and memory O(chunk·|A|·r), whatever P and n. On the CPU the chunks
    are shared among ``workers`` threads (each op on the caller's intra-op threads: one, inside
    ``core.glue.analyze``), their sums added in chunk order so the answer does not depend on it.
    ``beside``, when given, is one more task for those threads, queued first (``core.glue`` runs the
    regime check there, so that it no longer waits for the geometry); its result is dropped.
    """
    n_t, r, dev, dt = lam.shape[0], points.shape[1], lam.device, lam.dtype
    rows, cols = lam.nonzero(as_tuple=True)
    cls = classes[cols]
    w = torch.zeros((n_t, n_classes), dtype=dt, device=dev)
    w.index_put_((rows, cls), lam[rows, cols], accumulate=True)
    active = w > ACTIVE_RTOL * (w.max() if w.numel() else 0.0)
    keep = active[rows, cls]
    rows, cols, cls = rows[keep], cols[keep], cls[keep]
    coeff = lam[rows, cols] / w[rows, cls]
    counts = active.sum(dim=0)
    # s⁰_μ = Σ_k s_μ(k)/count_μ = Σ_i (Σ_k coeff_{k,i}) x_i / count_μ: only the support's points.
    weight = torch.zeros(points.shape[0], dtype=dt, device=dev).index_add_(0, cols, coeff)
    # One bag of support points per class (no (|support|, r) temporaries: 0.3 GB at P = 1000).
    used = weight.nonzero(as_tuple=True)[0]
    used = used[torch.argsort(classes[used], stable=True)]
    centers = bag_sums(classes[used], used, weight[used], points, n_classes)
    has_center = counts > 0
    centers = centers / torch.where(has_center, counts, torch.ones_like(counts))[:, None].to(dt)
    cc = centers @ centers.T
    sq_c = cc.diagonal()
    c_dir = sq_c > NORM_FLOOR
    # Class P is a zero row: the id of every unused slot, so gathers need no masking.
    centers_pad = torch.nn.functional.pad(centers, (0, 0, 0, 1))
    cc_pad = torch.nn.functional.pad(cc, (0, 1, 0, 1))
    sq_c_pad, c_dir_pad = cc_pad.diagonal(), torch.nn.functional.pad(c_dir, (0, 1))

    slot = active.cumsum(dim=1) - 1  # draw k's active class μ sits in slot[k, μ]
    width = max(1, int(active.sum(dim=1).max()) if n_t else 1)
    # Each entry's bag: its (draw, slot) pair, entries ordered by bag for embedding_bag.
    bag = rows * width + slot[rows, cls]
    bag, order = bag.sort(stable=True)
    cols, coeff = cols[order], coeff[order]
    step = max(1, _CHUNK_ELEMENTS // (width * r))
    off_diag = ~torch.eye(width, dtype=torch.bool, device=dev)

    def chunk(start: int) -> torch.Tensor:
        """The six sums of the draws start..start+b: Σa, Σb, Σ|cos| axis, its pair count, Σ|cos|
        centre-axis, its pair count."""
        b = min(step, n_t - start)
        # Slot ids and masks: ids[k, a] is the class in slot a of draw start + k (P when unused).
        k_act, mu_act = active[start : start + b].nonzero(as_tuple=True)
        ids = torch.full((b, width), n_classes, dtype=torch.long, device=dev)
        ids[k_act, slot[start + k_act, mu_act]] = mu_act
        valid = ids < n_classes
        # Anchors S (b, width, r): bag (k, a) sums coeff · x over its support entries (empty bags
        # give zero rows); then the axis parts S¹ = S − S⁰, zero on unused slots.
        lo, hi = torch.searchsorted(bag, torch.tensor([start, start + b], device=dev) * width).tolist()
        anchors = bag_sums(bag[lo:hi] - start * width, cols[lo:hi], coeff[lo:hi], points, b * width)
        c_slots = torch.index_select(centers_pad, 0, ids.view(-1)).view(b, width, r)
        s1 = anchors.view(b, width, r).sub_(c_slots)
        # Three batched products, not one over a concatenation of S¹, S⁰ and t: the (b, 2·width + 1, r)
        # copy cost more than the two extra calls (3 % of the geometry, same numbers to the bit).
        g1 = s1 @ s1.transpose(1, 2)
        s1_c0 = s1 @ c_slots.transpose(1, 2)
        t1 = (s1 @ t[start : start + b, :, None]).squeeze(-1)
        g0 = torch.take(cc_pad, ids[:, :, None] * (n_classes + 1) + ids[:, None, :])
        sq_s1 = g1.diagonal(dim1=1, dim2=2)
        usable = valid & (sq_s1 > NORM_FLOOR)
        pair = usable[:, :, None] & usable[:, None, :] & off_diag
        # |cos(s⁰_μ, s¹_ν(k))| for μ ≠ ν both active at k; rows ν, columns μ.
        pair_c = usable[:, :, None] & c_dir_pad[ids][:, None, :] & off_diag
        cos_ca = _abs_cos(s1_c0, sq_s1, sq_c_pad[ids])
        return torch.stack(
            [
                _quad_pinv(g1, t1).sum(),
                _quad_pinv(g0 + g1, t1).sum(),
                _abs_cos(g1, sq_s1, sq_s1)[pair].sum() / 2,
                pair.sum().to(dt) / 2,
                cos_ca[pair_c].sum(),
                pair_c.sum().to(dt),
            ]
        )

    starts = range(0, n_t, step)
    tasks: list[Callable[[], object]] = [] if beside is None else [beside]
    tasks += [functools.partial(chunk, start) for start in starts]
    done = run_all(lambda task: task(), tasks, workers if dev.type == "cpu" else 1)
    parts = cast(list[torch.Tensor], done[len(done) - len(starts) :])
    # Added in chunk order whatever the threads: the same sums as one thread, to the last bit.
    total = torch.stack(parts).sum(dim=0).tolist() if parts else [0.0] * 6
    sums = dict(zip(("a", "b", "axis", "axis_n", "ca", "ca_n"), total, strict=True))

    mean_a, mean_b = sums["a"] / n_t, sums["b"] / n_t

    with_dir = has_center & c_dir
    cos_cc = _abs_cos(cc, sq_c, sq_c)[with_dir][:, with_dir]
    m = int(with_dir.sum())
    center_alignment = float((cos_cc.sum() - cos_cc.diagonal().sum()) / (m * (m - 1))) if m > 1 else 0.0
    return Geometry(
        dimension=mean_a / n_classes,
        radius=radius_of(mean_a, mean_b),
        utilization=mean_b / n_crit if n_crit > 0 else 0.0,
        center_alignment=center_alignment,
        axis_alignment=sums["axis"] / sums["axis_n"] if sums["axis_n"] else 0.0,
        center_axis_alignment=sums["ca"] / sums["ca_n"] if sums["ca_n"] else 0.0,
        center_norm=float(torch.sqrt(sq_c.sum() / n_classes)),
    )
