"""Solvers for the GLUE inner problem: many non-negative least-squares problems over one point cloud.

For draw k the problem is (docs/method.md, "The markers")

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
  passive systems G_SS s = b_S are solved in the signed variables v = σ_S ⊙ s, where they read
  K_SS v = c_S with c = σ ⊙ b = X t (G_SS = D K_SS D, D = diag(σ_S)): no sign enters them, and v is
  the gradient's weight vector σ ⊙ λ itself. They go through Cholesky factors K_SS = LLᵀ that grow
  by one row per added index, with z = L⁻¹c_S growing by one entry, so a step's solve is one back
  substitution; the gradient of all draws is one weighted sum of |S| rows of the shared K per draw
  (λ has only |S| non-zeros). The entering rule and the inner loop are scipy's, so where λ is not
  unique (more points than dimensions) both take the same path to the same solution, as the tests
  check. Past 8192 points (and twice the rank) K is never formed:
  passive blocks come from the active points' coordinates and the gradient A_kᵀ(t_k − A_kλ) is two
  products through the r × n point matrix, so memory and time per step grow linearly in n.
  Finished draws leave the batch, so the cost follows the sum of the draws' iteration counts rather
  than B × the slowest. Every answer is checked against the KKT conditions (λ ≥ 0, w ≤ tol,
  w_S ≈ 0); a draw that fails them (a singular passive system, a stall) is reported so the caller
  can hand it to the reference.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.optimize
import torch

from zootriage.core.errors import CancelCheck, stop_if_cancelled
from zootriage.core.nnls_route import uses_gram
from zootriage.core.threads import run_all, single_threaded

# Entering threshold and KKT check, relative to the scale ‖t_k‖ · max_i ‖x_i‖ of the gradient entries.
_ENTER_RTOL = 1e-10
_KKT_RTOL = 1e-7
# Memory bound for one batch: draws × points entries per dense (B, n) tensor.
_BATCH_ELEMENTS = 1 << 22
# Smallest block cut to give a thread work of its own: below it the per-step overhead dominates.
_MIN_BLOCK = 64
Route = Literal["auto", "gram", "primal"]


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
    points: torch.Tensor,
    signs: torch.Tensor,
    t: torch.Tensor,
    *,
    cancel: CancelCheck | None = None,
    route: Route = "auto",
    workers: int | None = None,
    gram: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Solve all draws with the batched Lawson–Hanson method on ``points.device``.

    ``points`` (n, r), ``signs`` (B, n) of ±1 (any dtype: each block is converted to the points'),
    ``t`` (B, r), all on one device, the points and ``t`` float64. Returns
    λ (B, n) and a boolean (B,) mask of the draws whose solution passed the KKT check. ``cancel`` is
    polled at every Lawson–Hanson step of every block of draws (``core.errors.Cancelled`` stops the
    solve): one block of a large problem can take seconds. ``route`` picks how products with
    K = XXᵀ are formed (see ``_Cloud``): ``"auto"`` takes the cheaper one, the others exist so that
    both can be checked on the same problems. ``gram``: K = XXᵀ (n, n) when the caller already has
    it (``core.glue.preprocess_with_gram``), used on the Gram route instead of forming it here.

    On the CPU the blocks of draws (each bounded by memory, ``_BATCH_ELEMENTS``) are shared among
    ``workers`` Python threads (default: torch's thread count on entry, which the worker sets to its
    share of the cores, ``core.threads``), every operation on one intra-op thread: blocks are
    independent, so no thread waits for another (unlike OpenMP's barrier per operation), and torch
    releases the GIL inside each operation. When the draws fit in fewer memory-bounded blocks than
    there are threads, they are cut into one block per thread (``block_size``). On a GPU one block
    at a time is launched from the calling thread.
    """
    n, r = points.shape
    use_gram = uses_gram(n, r) if route == "auto" else route == "gram"
    lam = torch.zeros(signs.shape, dtype=points.dtype, device=points.device)
    ok = torch.zeros(signs.shape[0], dtype=torch.bool, device=points.device)
    threads = 1 if points.device.type != "cpu" else max(1, workers or torch.get_num_threads())
    step = block_size(signs.shape[0], n, threads)
    blocks = [slice(start, start + step) for start in range(0, signs.shape[0], step)]
    with single_threaded(points.device):  # small dense steps: see core.threads
        cloud = _Cloud(points, use_gram, gram)

        def run(sl: slice) -> None:
            lam[sl], ok[sl] = _solve_block(cloud, signs[sl], t[sl], cancel)

        run_all(run, blocks, threads)  # a cancelled or failed block: the queued ones never start
    return lam, ok


def block_size(draws: int, n: int, threads: int) -> int:
    """Draws per block: at most ``_BATCH_ELEMENTS`` // n (memory), and as many blocks as a multiple of
    ``threads``, of even size, so that no thread idles while another finishes a last block, but no
    block below ``_MIN_BLOCK`` draws unless memory asks for it.

    Splitting pays although each block then runs every Lawson–Hanson step with its own Python
    overhead: on the 2-core build machine (P = 10 × M = 50, N = 512, n_t = 1000, whole analysis)
    two blocks of 500 on two threads took 0.26 s against 0.37 s for one block of 1000, and 0.41 s
    against 0.69 s while two busy processes competed for the cores (the scheduler shares the cores
    per thread, so two threads also get a larger share of a contended machine).
    """
    step = max(1, _BATCH_ELEMENTS // max(n, 1))
    if threads <= 1:
        return step
    blocks = -(-draws // step)
    blocks = -(-blocks // threads) * threads
    return max(-(-draws // blocks), min(step, _MIN_BLOCK))


class _Cloud:
    """The shared point cloud, padded with a zero dummy point n, and its inner products K = XXᵀ.

    Two routes to the same numbers (``uses_gram`` picks one). Gram route: K is formed once (n²
    memory) and every product or passive block is a gather from it. Primal route: K is never
    formed; a passive
    block K_SS = X_S X_Sᵀ costs |S|²·r per draw, one row K_{jS} costs |S|·r, and the gradient goes
    through the r coordinates, (σ⊙λ)ᵀX then X·(…), 2·n·r per draw. Memory is then O(n·r) for the
    cloud plus O(B·n + B·|S|·r) per block of B draws: linear in n, never n².
    """

    def __init__(self, points: torch.Tensor, use_gram: bool, gram: torch.Tensor | None = None):
        self.n = points.shape[0]
        # The points themselves, not a padded copy (0.8 GB at P = 1000 × M = 50 × N = 2048): on
        # the primal route the dummy slot n reads point n − 1, whose products are masked.
        self.points = points
        self.sq_norms = torch.linalg.vector_norm(points, dim=1).square()  # no (n, r) temporary
        if use_gram and gram is None:
            gram = points @ points.T
        self.gram = torch.nn.functional.pad(gram, (0, 1, 0, 1)) if use_gram and gram is not None else None

    def block(self, idx: torch.Tensor) -> torch.Tensor:
        """K_SS for each draw's slots ``idx`` (B, C) → (B, C, C), zero in the rows and columns of
        slots at the dummy n."""
        if self.gram is not None:
            return torch.take(self.gram, idx[:, :, None] * (self.n + 1) + idx[:, None, :])
        x_s = self.points[idx.clamp(max=self.n - 1)] * (idx < self.n).unsqueeze(-1)
        return x_s @ x_s.transpose(1, 2)

    def row(self, enter: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """K_{j,S}: the inner products of point ``enter[b]`` with draw b's slots ``idx`` → (B, C), zero
        on slots at the dummy n."""
        if self.gram is not None:
            return torch.take(self.gram, enter[:, None] * (self.n + 1) + idx)
        x_s = self.points[idx.clamp(max=self.n - 1)]
        return (x_s @ self.points[enter].unsqueeze(-1)).squeeze(-1) * (idx < self.n)

    def times(self, idx: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """K times each draw's slot vector (point ``idx[b, c]`` weighted ``values[b, c]``; slots
        pointing at the dummy n are skipped) → dense (B, n+1), zero in the dummy column.

        A weighted sum of the |S| rows of K that draw b uses (``embedding_bag``, one bag of C slots per
        draw, the dummy skipped as its padding index: B·|S|·n, no sparse matrix built, no sort); on
        the primal route the same sum over the points' coordinates, then one dense product with Xᵀ."""
        if self.gram is not None:
            return torch.nn.functional.embedding_bag(
                idx, self.gram, mode="sum", per_sample_weights=values, padding_idx=self.n
            )
        # The points have no dummy row to skip: the bags are cut to the used slots.
        used = idx < self.n
        offsets = torch.nn.functional.pad(used.sum(dim=1).cumsum(0)[:-1], (1, 0))
        out = torch.nn.functional.embedding_bag(
            idx[used], self.points, offsets, mode="sum", per_sample_weights=values[used]
        )
        # Written straight into a zero-padded (B, n+1) array (a strided view: the BLAS takes its row
        # stride), not padded afterwards: at P = 1000 each such copy is 33 MB per block.
        full = torch.zeros((idx.shape[0], self.n + 1), dtype=out.dtype, device=out.device)
        full[:, : self.n].addmm_(out, self.points.T)
        return full


class _Problems:
    """The draws of one block: their signs σ (B, n+1) and linear terms b = σ ⊙ (X t) (B, n+1), both
    with a dummy column n (σ = 1, b = 0) that unused slots point to, and the scale of their gradients.
    G_k = σσᵀ ⊙ K is never formed."""

    def __init__(self, cloud: _Cloud, signs: torch.Tensor, t: torch.Tensor):
        points = cloud.points
        self.cloud, self.n = cloud, cloud.n
        self.signs = torch.nn.functional.pad(signs.to(points.dtype), (0, 1), value=1.0)
        self.b = torch.nn.functional.pad(t @ points.T, (0, 1)).mul_(self.signs)
        scale = t.norm(dim=1) * cloud.sq_norms.max().sqrt()
        self.scale = torch.clamp(scale, min=torch.finfo(points.dtype).tiny)

    def dense(self, idx: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """Slot values scattered to a dense (B, n) array (slots pointing at the dummy are dropped)."""
        out = torch.zeros((idx.shape[0], self.n + 1), dtype=values.dtype, device=values.device)
        return out.scatter_add_(1, idx, values)[:, : self.n]


def _gradient(
    cloud: _Cloud, b: torch.Tensor, signs: torch.Tensor, idx: torch.Tensor, v: torch.Tensor
) -> torch.Tensor:
    """w = b − Gλ = b − σ ⊙ (K (σ ⊙ λ)) as (B, n+1), σ ⊙ λ given by its slots: ``v`` at the points
    ``idx`` (zero on unused slots; w = 0 at the dummy). λ has only |S| ≪ n non-zeros, so this costs
    B·|S|·n, not B·n²."""
    product = cloud.times(idx, v)
    return torch.addcmul(b, signs, product, value=-1, out=product)  # in place


def _back(chol: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """The unconstrained minimiser on each passive set, v_S = K_SS⁻¹ c_S = L⁻ᵀ z, as slot values: one
    batched triangular solve (cholesky_solve would loop over the batch). Zero on unused slots, where
    z = 0 and L is the identity (unused slots come after the used ones)."""
    return torch.linalg.solve_triangular(chol.transpose(1, 2), z.unsqueeze(-1), upper=True).squeeze(-1)


class _Active:
    """The unfinished draws of a block with their passive sets, solved in signed variables.

    Slots are compact: draw b's passive indices sit in ``idx[b, :count[b]]``, the rest point at the
    dummy n. With D = diag(σ_S), G_SS = D K_SS D, so the passive system G_SS s = b_S is
    K_SS v = c_S in the signed variables v = σ_S ⊙ s, with c = σ ⊙ b = X t: no sign enters the
    passive solves, and v is the gradient's weight vector σ ⊙ λ itself. (The Cholesky factor of
    G_SS is D L D for L that of K_SS: every product differs by a sign only, which rounds alike.)
    ``v`` holds the current σ_S ⊙ λ_S, ``chol`` the factor L of each packed K_SS (identity on unused
    slots), ``z`` = L⁻¹ c_S; adding an index appends one row to the factor (O(C²) instead of
    refactoring in O(C³)) and one entry to z, so each step's passive solve is one back substitution.
    The block's ``b``, ``signs`` and entering thresholds ``tol`` are compacted along with the draws.
    """

    def __init__(self, prob: _Problems):
        b, dev, dt = prob.b.shape[0], prob.b.device, prob.b.dtype
        self.cloud, self.n = prob.cloud, prob.n
        self.b, self.signs, self.tol = prob.b, prob.signs, _ENTER_RTOL * prob.scale
        self.rows = torch.arange(b, device=dev)  # each draw's row in the block
        self.idx = torch.full((b, 8), self.n, dtype=torch.long, device=dev)
        self.v = torch.zeros((b, 8), dtype=dt, device=dev)
        self.count = torch.zeros(b, dtype=torch.long, device=dev)
        self.top = 0  # an upper bound on max(count), so that widening needs no sync most steps
        self.chol = torch.eye(8, dtype=dt, device=dev).repeat(b, 1, 1)
        self.z = torch.zeros((b, 8), dtype=dt, device=dev)

    def gradient(self) -> torch.Tensor:
        return _gradient(self.cloud, self.b, self.signs, self.idx, self.v)

    def slot_signs(self, rows: torch.Tensor | None = None) -> torch.Tensor:
        """σ on each slot (1 on unused ones), of all draws or of ``rows``."""
        if rows is None:
            return self.signs.gather(1, self.idx)
        return self.signs.index_select(0, rows).gather(1, self.idx.index_select(0, rows))

    def keep(self, rows: torch.Tensor) -> None:
        """Only the draws ``rows`` stay (``index_select``: several times faster on the CPU than
        indexing with a tensor)."""
        for name in ("b", "signs", "tol", "rows", "idx", "v", "count", "chol", "z"):
            setattr(self, name, getattr(self, name).index_select(0, rows))

    def append(self, enter: torch.Tensor) -> torch.Tensor:
        """Add index j = ``enter[b]`` to every draw's passive set by a rank-one extension of its factor:
        l = L⁻¹ K_Sj, d = sqrt(K_jj − ‖l‖²), and z_j = (c_j − l·z) / d. Returns the mask of draws where
        this worked (d² > 1e-12 K_jj); the others keep their passive set."""
        slots = self.idx.shape[1]
        if self.top >= slots:
            self.top = int(self.count.max())
            if self.top == slots:
                # Grow in steps of 8: the packed systems cost O(C²) per draw, so C stays near the
                # largest |S|.
                self.idx = torch.nn.functional.pad(self.idx, (0, 8), value=self.n)
                self.v = torch.nn.functional.pad(self.v, (0, 8))
                self.chol = _widen(self.chol, slots + 8)
                self.z = torch.nn.functional.pad(self.z, (0, 8))
        self.top += 1
        g = self.cloud.row(enter, self.idx)  # zero on unused slots
        l_row = torch.linalg.solve_triangular(self.chol, g.unsqueeze(-1), upper=False).squeeze(-1)
        g_jj = self.cloud.sq_norms.index_select(0, enter)
        d2 = g_jj - l_row.square().sum(dim=1)
        ok = d2 > 1e-12 * g_jj
        at = enter.unsqueeze(1)
        c_j = (self.b.gather(1, at) * self.signs.gather(1, at)).squeeze(1)
        z_j = c_j - (l_row * self.z).sum(dim=1)
        if bool(ok.all()):
            # The usual step: every draw takes its index. Four scatters along the slots (one write
            # per draw at its slot pos = count) instead of advanced-index writes, which build and
            # check index tensors on every call.
            d = d2.sqrt()
            pos = self.count.unsqueeze(1)
            row = l_row.scatter_(1, pos, d.unsqueeze(1))  # l is zero from slot pos on: L's new row
            self.chol.scatter_(1, pos.unsqueeze(2).expand(-1, 1, row.shape[1]), row.unsqueeze(1))
            self.z.scatter_(1, pos, (z_j / d).unsqueeze(1))
            self.idx.scatter_(1, pos, enter.unsqueeze(1))
            self.count += 1
            return ok
        here = ok.nonzero(as_tuple=True)[0]
        pos, d = self.count[here], d2[here].sqrt()
        l_row, z_j, enter = l_row[here], z_j[here], enter[here]
        self.chol[here, pos, :] = l_row  # l is zero from slot pos on: the row of L, bar its diagonal
        self.chol[here, pos, pos] = d
        self.z[here, pos] = z_j / d
        self.idx[here, pos] = enter
        self.count += ok
        return ok

    def refactor(
        self, rows: torch.Tensor, idx: torch.Tensor, used: torch.Tensor, sig: torch.Tensor
    ) -> torch.Tensor:
        """Cholesky factors of the draws ``rows``' new packed passive systems K_SS (identity on unused
        slots) and z = L⁻¹ c_S, c_S = σ_S ⊙ b_S, stored in place; returns the (len(rows),) mask of the
        draws whose system was positive definite."""
        k_ss = self.cloud.block(idx) + torch.diag_embed((~used).to(self.z.dtype))
        chol, info = torch.linalg.cholesky_ex(k_ss)
        c_s = (self.b.index_select(0, rows).gather(1, idx) * sig).unsqueeze(-1)
        self.chol[rows] = chol
        self.z[rows] = torch.linalg.solve_triangular(chol, c_s, upper=False).squeeze(-1)
        return info == 0


def _widen(chol: torch.Tensor, width: int) -> torch.Tensor:
    """Factors (B, C, C) padded to (B, width, width) with identity rows (unused slots)."""
    out = torch.eye(width, dtype=chol.dtype, device=chol.device).repeat(chol.shape[0], 1, 1)
    out[:, : chol.shape[1], : chol.shape[1]] = chol
    return out


def _solve_block(
    cloud: _Cloud, signs: torch.Tensor, t: torch.Tensor, cancel: CancelCheck | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lawson–Hanson on one block of draws; see the module docstring.

    Each step: the gradient w, the entering index (draws with nothing left to enter are finished),
    the rank-one extension of each factor, the inner loop. A draw that cannot take its entering index
    (numerically in the span of its passive set), drops it again in the inner loop, or meets a
    singular system has stalled in floating point: it stops there and the KKT check judges its answer.
    Finished draws leave the block at once (their slots are copied out, the block compacted).
    """
    with torch.inference_mode():  # no autograd bookkeeping in the ~40 small operations per step
        return _solve_block_steps(cloud, signs, t, cancel)


def _solve_block_steps(
    cloud: _Cloud, signs: torch.Tensor, t: torch.Tensor, cancel: CancelCheck | None
) -> tuple[torch.Tensor, torch.Tensor]:
    n_draws, n = signs.shape
    dev, dt = cloud.points.device, cloud.points.dtype
    full = _Problems(cloud, signs, t)
    act = _Active(full)
    out_idx = torch.full((n_draws, 1), n, dtype=torch.long, device=dev)
    out_v = torch.zeros((n_draws, 1), dtype=dt, device=dev)

    def finish(mask: torch.Tensor) -> torch.Tensor | None:
        """Copy the draws of ``mask`` out (their slots and signed values v; λ = σ ⊙ v is formed once
        at the end) and drop them; the block positions of the draws left (None when none is)."""
        nonlocal out_idx, out_v
        width = act.idx.shape[1]
        if width > out_idx.shape[1]:
            out_idx = torch.nn.functional.pad(out_idx, (0, width - out_idx.shape[1]), value=n)
            out_v = torch.nn.functional.pad(out_v, (0, width - out_v.shape[1]))
        gone = mask.nonzero(as_tuple=True)[0]
        rows = act.rows.index_select(0, gone)
        out_idx.narrow(1, 0, width).index_copy_(0, rows, act.idx.index_select(0, gone))
        out_v.narrow(1, 0, width).index_copy_(0, rows, act.v.index_select(0, gone))
        stay = (~mask).nonzero(as_tuple=True)[0]
        act.keep(stay)
        return stay if stay.numel() else None

    for step in range(3 * n + 10):
        stop_if_cancelled(cancel)
        # The gradient (b at λ = 0) lives only inside _entering: each is (B, n+1), 33 MB at P = 1000.
        w_max, enter = _entering(act.gradient() if step else act.b.clone(), act.idx)
        done = w_max <= act.tol
        if bool(done.any()):
            left = finish(done)
            if left is None:
                break
            enter = enter.index_select(0, left)
        stalled = ~act.append(enter)
        v, alive = _inner_loop(act)
        if alive is not None:  # the inner loop ran: a draw may have dropped its entering index again
            stalled |= ~alive | ~(act.idx == enter[:, None]).any(dim=1)
        if bool(stalled.any()):
            act.v = torch.where(stalled[:, None], act.v, v)
            if finish(stalled) is None:
                break
        else:
            act.v = v
    else:
        finish(torch.ones(act.rows.shape, dtype=torch.bool, device=dev))
    out_x = out_v * full.signs.gather(1, out_idx)  # λ on the slots (σ = 1 on unused ones, v = 0)
    return full.dense(out_idx, out_x), _kkt_holds(full, out_idx, out_v, out_x)


def _entering(w: torch.Tensor, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The largest gradient entry of each draw and its index, over the indices not in its passive
    set (``w`` is overwritten). The dummy column n (w = 0, or −∞ once an unused slot points at it)
    wins only when no real index has w > 0, and then the draw is done anyway. On the CPU numpy finds
    it (the first of equal entries): its argmax is vectorised, torch's ``max(dim=1)`` is not (35
    against 150 µs for 500 draws × 501 on one core)."""
    w.scatter_(1, idx, -torch.inf)
    if w.device.type != "cpu":
        return w.max(dim=1)
    enter = torch.from_numpy(w.numpy().argmax(axis=1))
    return w.gather(1, enter[:, None]).squeeze(1), enter


def _inner_loop(act: _Active) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Lawson–Hanson's inner loop: step back along λ → s until every passive s_i is positive.

    s = σ_S ⊙ v_S for the signed solution v_S = L⁻ᵀz. While some passive s_i ≤ 0, move λ by the
    largest step α = min_{i: s_i ≤ 0} λ_i / (λ_i − s_i) that keeps λ ≥ 0, drop the indices that reach
    zero, compact the slots, refactor and re-solve. Updates ``act`` in place; returns the final
    signed solutions v and, when some draw needed the loop, the mask of draws whose passive systems
    stayed solvable (None when no draw did: the usual step, nothing to check).
    """
    n = act.n
    v = _back(act.chol, act.z)
    sig = act.slot_signs()
    todo = ((v * sig <= 0) & (act.idx < n)).any(dim=1).nonzero(as_tuple=True)[0]
    if not todo.numel():
        return v, None
    alive = torch.ones(v.shape[0], dtype=torch.bool, device=v.device)
    while todo.numel():
        sig = act.slot_signs(todo)
        used = act.idx.index_select(0, todo) < n
        x, sub_s = act.v.index_select(0, todo) * sig, v.index_select(0, todo) * sig  # λ and s
        neg = used & (sub_s <= 0)
        step = x / torch.clamp(x - sub_s, min=torch.finfo(x.dtype).tiny)
        ratio = torch.where(neg, step, torch.full_like(x, torch.inf))
        alpha = ratio.min(dim=1).values.clamp(0, 1)
        x = x + alpha[:, None] * (sub_s - x)
        stay = used & (x > 0) & ~(neg & (ratio <= alpha[:, None]))
        order = torch.argsort((~stay).to(torch.int8), dim=1, stable=True)
        stay = stay.gather(1, order)
        idx = torch.where(stay, act.idx.index_select(0, todo).gather(1, order), n)
        sig = torch.where(stay, sig.gather(1, order), 1.0)
        act.idx[todo], act.v[todo], act.count[todo] = idx, x.gather(1, order) * stay * sig, stay.sum(dim=1)
        ok = act.refactor(todo, idx, stay, sig)
        sub_v = _back(act.chol.index_select(0, todo), act.z.index_select(0, todo))
        ok &= torch.isfinite(sub_v).all(dim=1)
        v[todo], alive[todo] = torch.where(ok[:, None], sub_v, 0.0), ok
        todo = todo[ok & ((sub_v * sig <= 0) & stay).any(dim=1)]
    return v, alive


def _kkt_holds(prob: _Problems, idx: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """KKT of min_{λ≥0} ½λᵀGλ − bᵀλ: λ ≥ 0, w = b − Gλ ≤ 0 everywhere and w = 0 where λ > 0.

    λ is given by its slots: points ``idx``, values ``x`` = λ and ``v`` = σ ⊙ λ (zero on unused
    slots, which point at the dummy n, where w = 0). λ is zero off its slots, so λ ≥ 0 and the
    support's condition are checked on the slots alone."""
    w = _gradient(prob.cloud, prob.b, prob.signs, idx, v)
    tol = _KKT_RTOL * prob.scale[:, None]
    on_support = torch.where(x > 0, w.gather(1, idx).abs(), 0.0)
    return (x >= 0).all(dim=1) & (w[:, : prob.n] <= tol).all(dim=1) & (on_support <= tol).all(dim=1)
