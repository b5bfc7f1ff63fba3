"""Solvers for the GLUE inner problem: many non-negative least-squares problems over one point cloud.

For draw k the problem is (shared/GLUE.md, "Inner problem")

    λ*_k = argmin_{λ ≥ 0} ‖A_k λ − t_k‖²,   A_k = [σ_{k,i} x_i]  (one column per point),

with σ_{k,i} = −y_{k,μ(i)} ∈ {±1} the sign the dichotomy gives point i. Every A_k is the same point
cloud with column signs flipped, so with K = X Xᵀ the Gram matrices are G_k = A_kᵀA_k = σ_kσ_kᵀ ⊙ K and
the linear terms b_k = A_kᵀ t_k = σ_k ⊙ (X t_k). The problem is the quadratic program
min_{λ≥0} ½ λᵀG_kλ − b_kᵀλ, whose negative gradient is w_k = b_k − G_kλ.

Two solvers:

* :func:`solve_reference`: one ``scipy.optimize.nnls`` call per draw on the explicit A_k. Simple,
  exact, slow; the ground truth the fast path is tested against.
* :func:`solve_batched`: the Lawson–Hanson active-set method in its Gram form (Bro & de Jong, 1997,
  "A fast non-negativity-constrained least squares algorithm"), run on all draws at once in torch.
  Each outer step adds the most violated index to every unfinished draw's passive set; the small
  passive systems G_SS s = b_S are solved as one batch of Cholesky factorisations, and the gradient
  of all draws is a single matrix product with the shared K. Finished draws leave the batch, so the
  cost follows the sum of the draws' iteration counts rather than B × the slowest. Every answer is
  checked against the KKT conditions (λ ≥ 0, w ≤ tol, w_S ≈ 0); a draw that fails them (a singular
  passive system, a stall) is reported so the caller can hand it to the reference.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
import torch

# Entering threshold and KKT check, relative to the scale ‖t_k‖ · max_i ‖x_i‖ of the gradient entries.
_ENTER_RTOL = 1e-10
_KKT_RTOL = 1e-7
# Memory bound for one batch: draws × points entries per dense (B, n) tensor.
_BATCH_ELEMENTS = 1 << 22


def solve_reference(points: np.ndarray, signs: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Solve each draw with ``scipy.optimize.nnls`` on the explicit matrix A_k (r × n).

    ``points`` (n, r), ``signs`` (B, n) of ±1, ``t`` (B, r); returns λ (B, n).
    """
    lam = np.zeros(signs.shape, dtype=np.float64)
    for k in range(signs.shape[0]):
        a = (points * signs[k][:, None]).T
        lam[k], _ = scipy.optimize.nnls(a, t[k])
    return lam


def solve_batched(
    points: torch.Tensor, signs: torch.Tensor, t: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Solve all draws with the batched Lawson–Hanson method on ``points.device``.

    ``points`` (n, r), ``signs`` (B, n) of ±1, ``t`` (B, r), all float64 on one device. Returns
    λ (B, n) and a boolean (B,) mask of the draws whose solution passed the KKT check.
    """
    n = points.shape[0]
    gram = points @ points.T
    lam = torch.zeros(signs.shape, dtype=points.dtype, device=points.device)
    ok = torch.zeros(signs.shape[0], dtype=torch.bool, device=points.device)
    step = max(1, _BATCH_ELEMENTS // max(n, 1))
    for start in range(0, signs.shape[0], step):
        sl = slice(start, start + step)
        lam[sl], ok[sl] = _solve_block(points, gram, signs[sl], t[sl])
    return lam, ok


class _Problems:
    """The draws of one block: G_k = σσᵀ ⊙ K applied without forming it, and the passive solves.

    A passive set is held as slots: ``idx`` (B, C) point indices with a ``used`` mask. Index n is a
    dummy column (zero in K, b and the gradient) that unused slots point to, so gathers never alias
    a real point and unused slots become identity rows of the packed systems.
    """

    def __init__(self, points: torch.Tensor, gram: torch.Tensor, signs: torch.Tensor, t: torch.Tensor):
        n = points.shape[0]
        self.points, self.n = points, n
        self.gram = torch.nn.functional.pad(gram, (0, 1, 0, 1))
        self.signs = torch.nn.functional.pad(signs, (0, 1), value=1.0)
        self.b = torch.nn.functional.pad(signs * (t @ points.T), (0, 1))
        scale = t.norm(dim=1) * points.norm(dim=1).max()
        self.scale = torch.clamp(scale, min=torch.finfo(points.dtype).tiny)
        # The Gram route costs B·n² per product, the primal route (through the r coordinates) 2·B·n·r.
        self.use_gram = n <= 2 * points.shape[1]

    def take(self, rows: torch.Tensor) -> _Problems:
        sub = object.__new__(_Problems)
        sub.points, sub.n, sub.gram, sub.use_gram = self.points, self.n, self.gram, self.use_gram
        sub.signs, sub.b, sub.scale = self.signs[rows], self.b[rows], self.scale[rows]
        return sub

    def dense(self, idx: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """Slot values scattered to a dense (B, n) array (slots pointing at the dummy are dropped)."""
        out = torch.zeros((idx.shape[0], self.n + 1), dtype=values.dtype, device=values.device)
        return out.scatter_add_(1, idx, values)[:, : self.n]

    def gradient(self, idx: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """w = b − Gλ = b − σ ⊙ (K (σ ⊙ λ)) as (B, n+1), λ given by its slots (w = 0 at the dummy)."""
        signed = self.dense(idx, self.signs.gather(1, idx) * x)
        if self.use_gram:
            g = signed @ self.gram[: self.n]
        else:
            g = torch.nn.functional.pad((signed @ self.points) @ self.points.T, (0, 1))
        return self.b - self.signs * g

    def solve_passive(self, idx: torch.Tensor, used: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Unconstrained minimiser on each passive set, s_S = G_SS⁻¹ b_S, as slot values (0 if unused).

        Returns s and a (B,) mask of the draws whose packed system was positive definite.
        """
        sig = self.signs.gather(1, idx) * used
        g_ss = self.gram[idx[:, :, None], idx[:, None, :]] * sig[:, :, None] * sig[:, None, :]
        g_ss = g_ss + torch.diag_embed((~used).to(g_ss.dtype))
        chol, info = torch.linalg.cholesky_ex(g_ss)
        b_s = (self.b.gather(1, idx) * used).unsqueeze(-1)
        s = torch.cholesky_solve(b_s, chol).squeeze(-1) * used
        good = (info == 0) & torch.isfinite(s).all(dim=1)
        return torch.where(good[:, None], s, torch.zeros_like(s)), good


def _solve_block(
    points: torch.Tensor, gram: torch.Tensor, signs: torch.Tensor, t: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lawson–Hanson on one block of draws; see the module docstring."""
    n_draws, n = signs.shape
    dev = points.device
    full = _Problems(points, gram, signs, t)
    prob = full
    rows = torch.arange(n_draws, device=dev)
    out_idx = torch.full((n_draws, 1), n, dtype=torch.long, device=dev)
    out_x = torch.zeros((n_draws, 1), dtype=points.dtype, device=dev)
    idx, x = out_idx.clone(), out_x.clone()
    used = torch.zeros(idx.shape, dtype=torch.bool, device=dev)
    w = prob.b.clone()

    def finish(mask: torch.Tensor) -> None:
        nonlocal out_idx, out_x
        if idx.shape[1] > out_idx.shape[1]:
            grow = idx.shape[1] - out_idx.shape[1]
            out_idx = torch.nn.functional.pad(out_idx, (0, grow), value=n)
            out_x = torch.nn.functional.pad(out_x, (0, grow))
        out_idx[rows[mask], : idx.shape[1]] = torch.where(used[mask], idx[mask], n)
        out_x[rows[mask], : idx.shape[1]] = x[mask] * used[mask]

    for _ in range(3 * n + 10):
        w_max, enter = w.scatter(1, idx, -torch.inf)[:, :n].max(dim=1)
        going = w_max > _ENTER_RTOL * prob.scale
        if not bool(going.all()):
            finish(~going)
            keep = going.nonzero(as_tuple=True)[0]
            rows, prob, idx, x, used, enter = (
                rows[keep],
                prob.take(keep),
                idx[keep],
                x[keep],
                used[keep],
                enter[keep],
            )
            if rows.numel() == 0:
                break
        if bool(used.all(dim=1).any()):
            idx = torch.nn.functional.pad(idx, (0, idx.shape[1]), value=n)
            x = torch.nn.functional.pad(x, (0, x.shape[1]))
            used = torch.nn.functional.pad(used, (0, used.shape[1]))
        here = torch.arange(rows.numel(), device=dev)
        slot = (~used).to(torch.int8).argmax(dim=1)
        idx[here, slot] = enter
        used[here, slot] = True
        s, alive = _inner_loop(prob, idx, x, used)
        # A draw whose entering index was dropped again, or whose passive system was singular, has
        # stalled in floating point: stop it here and let the KKT check below judge its answer.
        stalled = ~used[here, slot] | ~alive
        x = torch.where(stalled[:, None], x, s)
        used = used & (x > 0)
        idx = torch.where(used, idx, n)
        if bool(stalled.any()):
            finish(stalled)
            keep = (~stalled).nonzero(as_tuple=True)[0]
            rows, prob, idx, x, used = rows[keep], prob.take(keep), idx[keep], x[keep], used[keep]
            if rows.numel() == 0:
                break
        w = prob.gradient(idx, x)
    else:
        finish(torch.ones(rows.shape, dtype=torch.bool, device=dev))
    lam = full.dense(out_idx, out_x)
    return lam, _kkt_holds(full, out_idx, out_x, lam)


def _inner_loop(
    prob: _Problems, idx: torch.Tensor, x: torch.Tensor, used: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lawson–Hanson's inner loop: step back along λ → s until every passive s_i is positive.

    While some passive s_i ≤ 0, move λ by the largest step α = min_{i: s_i ≤ 0} λ_i / (λ_i − s_i) that
    keeps λ ≥ 0, drop the indices that reach zero and re-solve. Updates ``x`` and ``used`` in place;
    returns the final s and a mask of draws whose passive systems stayed solvable.
    """
    s, alive = prob.solve_passive(idx, used)
    todo = (alive & (used & (s <= 0)).any(dim=1)).nonzero(as_tuple=True)[0]
    while todo.numel():
        sub_x, sub_s, sub_used = x[todo], s[todo], used[todo]
        neg = sub_used & (sub_s <= 0)
        step = sub_x / torch.clamp(sub_x - sub_s, min=torch.finfo(sub_x.dtype).tiny)
        ratio = torch.where(neg, step, torch.full_like(sub_x, torch.inf))
        alpha = ratio.min(dim=1).values.clamp(0, 1)
        sub_x = sub_x + alpha[:, None] * (sub_s - sub_x)
        sub_used = sub_used & (sub_x > 0) & ~(neg & (ratio <= alpha[:, None]))
        x[todo] = sub_x * sub_used
        used[todo] = sub_used
        sub_s, sub_alive = prob.take(todo).solve_passive(idx[todo], sub_used)
        s[todo], alive[todo] = sub_s, sub_alive
        todo = todo[sub_alive & (sub_used & (sub_s <= 0)).any(dim=1)]
    return s, alive


def _kkt_holds(prob: _Problems, idx: torch.Tensor, x: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """KKT of min_{λ≥0} ½λᵀGλ − bᵀλ: λ ≥ 0, w = b − Gλ ≤ 0 everywhere and w = 0 where λ > 0."""
    w = prob.gradient(idx, x)[:, : prob.n]
    tol = _KKT_RTOL * prob.scale[:, None]
    on_support = torch.where(lam > 0, w.abs(), torch.zeros_like(w))
    return (lam >= 0).all(dim=1) & (w <= tol).all(dim=1) & (on_support <= tol).all(dim=1)
