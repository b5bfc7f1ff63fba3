"""GLUE manifold capacity and effective geometry from penultimate features (docs/method.md).

The object manifolds are the feature rows of each class. For n_t Gaussian draws t_k and random
dichotomies y_k, the inner problem projects t_k onto the cone of separating directions
(v* = argmin ½‖v − t‖² s.t. y_μ⟨v, x⟩ ≥ 0 for every point x of every manifold μ), an NNLS problem
solved in :mod:`core.nnls`. Its cost N(t_k) = ‖v* − t_k‖² averages to the critical dimension N_crit;
capacity is α = P / N_crit. The anchor points of the solution give the effective dimension D_eff,
radius R_eff and utilization Ψ_eff (:mod:`core.glue_geometry`), with α = Ψ_eff (1 + R_eff⁻²) / D_eff.

Preprocessing: float64; optional global centring; an exact rotation of the points into their span
(QR, r = min(N, n)), which changes nothing but cost since the part of t outside the span never meets
a constraint; and a global rescaling to unit RMS point norm, which leaves every marker unchanged
(all are scale-free except ``center_norm``, which is reported in the features' own units).

With ``repeats`` > 1 each repeat uses its own points where the data allow it (disjoint per-class
subsets, :mod:`core.glue_subsets`), so that the repeats' spread is the noise between two runs on
different images; ``noise`` says how much of that noise they could see.

Every result reports its regime (:mod:`core.glue_regime`): whether the drawn dichotomies are
separable through the origin and whether N(t) saturated; a degenerate result's markers must never
decide anything.

Random numbers come from numpy's PCG64 on the CPU, seeded through ``SeedSequence(seed)``, so a
result depends on the seed alone, not on the device, the solver or the thread count.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, cast

import numpy as np
import torch

from zootriage.core.allocator import keep_freed_memory
from zootriage.core.device import resolve_device
from zootriage.core.errors import CancelCheck, stop_if_cancelled
from zootriage.core.glue_geometry import bag_sums, effective_geometry, radius_of
from zootriage.core.glue_regime import Regime, combine, judge, saturated_fraction, separable_fraction
from zootriage.core.glue_subsets import Noise, seeded_subsets
from zootriage.core.inputs import class_labels, finite_matrix
from zootriage.core.nnls import solve_batched, solve_reference
from zootriage.core.nnls_route import uses_gram
from zootriage.core.protocol import CENTERINGS, DICHOTOMIES, Centering, Dichotomy
from zootriage.core.threads import run_all, single_threaded

Solver = Literal["fast", "reference"]
SOLVERS: tuple[str, ...] = ("fast", "reference")

MARKERS: tuple[str, ...] = (
    "capacity",
    "n_crit",
    "dimension",
    "radius",
    "utilization",
    "center_alignment",
    "axis_alignment",
    "center_axis_alignment",
    "center_norm",
)


@dataclass(frozen=True)
class GlueResult:
    """The GLUE markers of one analysis; with ``repeats`` > 1, means over the repeats.

    ``std`` holds each marker's standard deviation over the repeats (None for a single one: no
    noise estimate); ``n_crit_sem`` is the Monte-Carlo standard error of ``n_crit``; ``n_fallback``
    counts the draws the fast solver handed to the reference solver because its answer failed the
    KKT check. ``regime`` says whether the analysis is degenerate (:mod:`core.glue_regime`): then
    its markers are numbers without meaning and must never decide anything. ``noise`` says whether
    the repeats used disjoint points (their spread is the full sampling noise), overlapping ones (the
    std understates it; ``decision_std`` applies the finite-population bound) or the same ones
    (draws only: a lower bound that must not decide), see :mod:`core.glue_subsets`.
    """

    capacity: float
    n_crit: float
    n_crit_sem: float
    dimension: float
    radius: float
    utilization: float
    center_alignment: float
    axis_alignment: float
    center_axis_alignment: float
    center_norm: float
    n_classes: int
    n_points: int
    n_t: int
    repeats: int = 1
    std: dict[str, float] | None = None
    n_fallback: int = 0
    regime: Regime | None = None
    noise: Noise | None = None

    @property
    def degenerate(self) -> bool:
        return self.regime is not None and self.regime.degenerate

    @property
    def decision_std(self) -> dict[str, float] | None:
        """``std`` scaled by the noise's inflation, the spread a decision may use; None without a
        noise estimate or when nothing bounds it (``noise.inflation`` None: draws-only repeats)."""
        if self.std is None or self.noise is None or self.noise.inflation is None:
            return None
        return {m: v * self.noise.inflation for m, v in self.std.items()}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Draws:
    """One analysis's inputs and solutions, for callers and tests that look below the markers.

    ``points`` (n, r) are the preprocessed (rotated, rescaled) features, ``classes`` (n,) their class
    indices 0..P−1, ``t`` (n_t, r) the Gaussian draws, ``signs`` (n_t, n) the int8 column signs
    σ_{k,i} = −y_{k,μ(i)}, ``lam`` (n_t, n) the NNLS solutions, ``n_of_t`` (n_t,) the costs N(t_k)
    and ``cone`` (n_t, r) the points A_kλ_k (so v*_k = t_k − A_kλ_k).
    ``scale`` is the factor the features were divided by; ``dichotomies`` (n_t, P) the labels y_k.
    """

    points: torch.Tensor
    classes: torch.Tensor
    n_classes: int
    t: torch.Tensor
    signs: torch.Tensor
    lam: torch.Tensor
    n_of_t: torch.Tensor
    cone: torch.Tensor
    scale: float
    n_fallback: int
    dichotomies: np.ndarray


def analyze(
    features: Any,
    labels: Any,
    *,
    n_t: int = 1000,
    seed: int = 0,
    centering: Centering = "none",
    dichotomy: Dichotomy = "one_vs_rest",
    points_per_class: int | None = None,
    repeats: int = 1,
    solver: Solver = "fast",
    device: str | torch.device | None = None,
    cancel: CancelCheck | None = None,
) -> GlueResult:
    """GLUE markers of the class manifolds in ``features`` (n, N) grouped by ``labels`` (n,).

    ``points_per_class`` subsamples each class (seeded; the paper uses 50); ``repeats`` combines
    that many subsamples and draws (see ``_combine``) and reports the spread in ``std`` (None for one
    repeat: no noise estimate). The subsamples are disjoint when every class has at least
    repeats × points_per_class points, else they overlap; ``noise`` labels which
    (``core.glue_subsets.repeat_subsets``). ``solver`` picks the batched Lawson–Hanson solver
    (``"fast"``, on ``device``: CUDA when present by default) or per-draw ``scipy.optimize.nnls``
    (``"reference"``). Raises ``ValueError`` on bad input.
    ``cancel`` is polled before every repeat and every solver batch: when it answers yes the analysis
    stops with ``core.errors.Cancelled`` (a large ``repeats`` can otherwise run for hours).
    """
    x, classes, n_classes = glue_inputs(features, labels)
    _check_options(n_t, centering, dichotomy, points_per_class, repeats, solver)
    dev = resolve_device(device)
    keep_freed_memory()  # its temporaries are reused instead of faulted back in (core.allocator)
    runs = []
    subsets, noise = seeded_subsets(classes, points_per_class, repeats, seed)
    root = np.random.SeedSequence(seed)
    root.spawn(1)  # its first child drew the subsets (seeded_subsets); the repeats take the next ones
    workers = torch.get_num_threads()  # the process's share of the cores, before single_threaded
    for keep in subsets:
        stop_if_cancelled(cancel)
        # One child at a time: the seeds of spawn(1 + repeats)[1:], without building them all up front.
        (child,) = root.spawn(1)
        # Every row kept in order (no subsampling) needs no copy: at ImageNet scale the features are GBs.
        chosen = x if keep.size == x.shape[0] and np.array_equal(keep, np.arange(keep.size)) else x[keep]
        # Every stage is a chain of small dense steps: one CPU thread (core.threads).
        with single_threaded(dev):
            d = solve_draws(
                chosen,
                classes[keep],
                n_classes,
                child,
                n_t,
                centering,
                dichotomy,
                solver,
                dev,
                cancel=cancel,
                workers=workers,
            )
            runs.append(_summarize(d, workers))
    return replace(_combine(runs), noise=noise)


def glue_inputs(features: Any, labels: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Check the data once at the boundary; return float64 features, class indices 0..P−1 and P."""
    x = finite_matrix("features", features)
    _, classes = class_labels(labels, x.shape[0])
    return x, classes, int(classes.max()) + 1


def _check_options(
    n_t: int, centering: str, dichotomy: str, points_per_class: int | None, repeats: int, solver: str
) -> None:
    if not isinstance(n_t, int | np.integer) or n_t < 1:
        raise ValueError(f"n_t must be a positive integer, got {n_t!r}")
    if centering not in CENTERINGS:
        raise ValueError(f"centering must be one of {CENTERINGS}, got {centering!r}")
    if dichotomy not in DICHOTOMIES:
        raise ValueError(f"dichotomy must be one of {DICHOTOMIES}, got {dichotomy!r}")
    if points_per_class is not None and (
        not isinstance(points_per_class, int | np.integer) or points_per_class < 2
    ):
        raise ValueError(f"points_per_class must be an integer ≥ 2 or None, got {points_per_class!r}")
    if not isinstance(repeats, int | np.integer) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")


def solve_draws(
    x: np.ndarray,
    classes: np.ndarray,
    n_classes: int,
    seed: np.random.SeedSequence,
    n_t: int,
    centering: str,
    dichotomy: str,
    solver: str,
    device: torch.device,
    *,
    cancel: CancelCheck | None = None,
    workers: int | None = None,
) -> Draws:
    """Preprocess the (already subsampled, valid) points, draw (t_k, y_k) and solve every inner
    problem (the fast solver on ``workers`` CPU threads, see ``core.nnls.solve_batched``). With two
    or more CPU threads, a rotation and the Gram route, the solver's K = XXᵀ is formed beside the
    QR (``preprocess_with_gram``); on a GPU the solver forms it there."""
    t_rng, y_rng = (np.random.default_rng(s) for s in seed.spawn(2))
    gram = None
    threads = workers or 1
    if solver == "fast" and device.type == "cpu" and threads > 1 and _rotates(x.shape):
        # The draws need only the rank r = n (the rotation's width), not the points: drawn on the
        # pool beside the QR and K (numpy releases the GIL while it fills them).
        drawn: list[np.ndarray] = []
        points, scale, gram = preprocess_with_gram(
            x, centering, threads, beside=lambda: drawn.append(t_rng.standard_normal((n_t, x.shape[0])))
        )
        t = drawn[0]
    else:
        points, scale = preprocess(x, centering)
        t = t_rng.standard_normal((n_t, points.shape[1]))
    dichotomies = draw_dichotomies(n_classes, n_t, dichotomy, y_rng)
    # ±1 as int8: the (n_t, n) signs are 0.4 GB in float64 at P = 1000 × M = 50, n_t = 1000.
    signs = (-dichotomies).astype(np.int8)[:, classes]

    pts = torch.from_numpy(points).to(device)
    sig = torch.from_numpy(signs).to(device)
    tt = torch.from_numpy(t).to(device)
    n_fallback = 0
    if solver == "reference":
        lam = torch.from_numpy(solve_reference(points, signs, t)).to(device)
    else:
        lam, ok = solve_batched(pts, sig, tt, cancel=cancel, workers=workers, gram=gram)
        bad = (~ok).nonzero(as_tuple=True)[0]
        n_fallback = int(bad.numel())
        if n_fallback:
            idx = bad.cpu().numpy()
            lam[bad] = torch.from_numpy(solve_reference(points, signs[idx], t[idx])).to(device)
    if device.type == "cpu" and threads > 1 and n_t > 1:
        # One bag per draw: the draws split into one piece per thread give the same sums.
        step = -(-n_t // threads)
        pieces = [slice(start, start + step) for start in range(0, n_t, step)]
        cone = torch.cat(run_all(lambda sl: cone_points(sig[sl], lam[sl], pts), pieces, threads))
    else:
        cone = cone_points(sig, lam, pts)
    cls = torch.from_numpy(classes).to(device)
    n_of_t = cone.square().sum(dim=1)
    return Draws(pts, cls, n_classes, tt, sig, lam, n_of_t, cone, scale, n_fallback, dichotomies)


def cone_points(signs: torch.Tensor, lam: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """A_k λ_k = Σ_i σ_{k,i} λ_{k,i} x_i for every draw, (n_t, r), through λ's support only: |S|·r per
    draw instead of the dense n·r (at P = 1000 that is 80 against 50,000 points). One bag of points
    per draw; the support's entries come in row-major order from ``nonzero``."""
    rows, cols = lam.nonzero(as_tuple=True)
    return bag_sums(rows, cols, signs[rows, cols] * lam[rows, cols], points, lam.shape[0])


def preprocess(x: np.ndarray, centering: str) -> tuple[np.ndarray, float]:
    """Centre (optionally), rotate into the span of the points and rescale to unit RMS norm.

    With N > n the points X (n × N) are replaced by X Q, where Xᵀ = QR is a reduced QR with
    diag(R) ≥ 0; the sign convention makes the rotation, and so the meaning of each draw t,
    independent of the LAPACK build. Returns the (n, min(N, n)) points and the scale divided out.
    """
    features = x
    if centering == "global":
        x = x - x.mean(axis=0, keepdims=True)
    if x.shape[1] > x.shape[0]:
        # R alone, single-threaded (core.threads): numpy's threaded QR that also forms Q took 8 s on
        # 2048 × 500 on the loaded build machine, this 0.24 s.
        with single_threaded(torch.device("cpu")):
            r = torch.linalg.qr(torch.from_numpy(x.T), mode="r").R.numpy()
        sign = np.where(np.diag(r) < 0, -1.0, 1.0)
        x = r.T * sign[None, :]
    scale = float(np.sqrt(np.mean(np.einsum("ij,ij->i", x, x))))  # no (n, r) temporary
    if scale == 0.0:
        raise ValueError("all features are zero (after centering): the manifolds have no geometry")
    if x is features:  # the caller's array: one scaled copy (at ImageNet scale each copy is 0.8 GB)
        return np.ascontiguousarray(x / scale), scale
    x /= scale
    return np.ascontiguousarray(x), scale


def _rotates(shape: tuple[int, ...]) -> bool:
    """Whether ``preprocess`` rotates (n, N) features into their span (N > n) and the solver then
    takes the Gram route (``core.nnls_route.uses_gram`` at rank r = n)."""
    n, dim = shape
    return dim > n and uses_gram(n, n)


def preprocess_with_gram(
    x: np.ndarray, centering: str, workers: int, *, beside: Callable[[], object] | None = None
) -> tuple[np.ndarray, float, torch.Tensor]:
    """``preprocess`` and the Gram matrix K = XXᵀ of the points it returns, the two at once on two
    threads of the shared pool (``core.threads.run_all``), so that K no longer waits for the QR.
    ``beside``, when given, runs as a third task of the same pool (``solve_draws`` draws the
    Gaussian t_k there: with two threads it follows K, which is shorter than the QR); its result is
    dropped, so it keeps what it makes itself.

    K is invariant under the rotation: with Xᵀ = QR the points are X Q / s (s the scale), so
    K = (X Q)(X Q)ᵀ / s² = X Xᵀ / s², computed from the (centred) features while the QR runs. It
    differs from the product of the rotated points in rounding only (relative 1e-16). Both stages
    are single-threaded (``core.threads``); on the 2-core build machine they were the two largest
    serial pieces of a small analysis (QR 9 ms, K 6 ms at P = 10 × M = 50, N = 512). With global
    centring each task centres its own copy (n·N doubles more for the moment of the QR).
    """

    def raw_gram() -> torch.Tensor:
        feats = torch.from_numpy(x - x.mean(axis=0, keepdims=True) if centering == "global" else x)
        return feats @ feats.T

    # One intra-op thread for both, set here once: each task changing the process-wide count
    # itself could restore it under the other's feet.
    with single_threaded(torch.device("cpu")):
        tasks: list[Callable[[], object]] = [lambda: preprocess(x, centering), raw_gram]
        prepared, raw, *_ = run_all(lambda task: task(), [*tasks, *([beside] if beside else [])], workers)
    points, scale = cast(tuple[np.ndarray, float], prepared)
    return points, scale, cast(torch.Tensor, raw).div_(scale * scale)


def draw_dichotomies(n_classes: int, n_t: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    """Labels y_k ∈ {±1}^P as an (n_t, P) array.

    ``one_vs_rest``: one class drawn uniformly gets +1, the others −1 (the default).
    ``first_vs_rest``: y = (+1, −1, …, −1) for every draw (the natural choice for P = 2).
    ``random``: i.i.d. fair signs. Caveat: the all-same-sign dichotomies it draws are infeasible once
    the features are globally centred (the cone collapses to a subspace), which inflates N(t) and
    deflates capacity; it is offered for comparison, not as a default.
    """
    if kind == "one_vs_rest":
        y = -np.ones((n_t, n_classes))
        y[np.arange(n_t), rng.integers(n_classes, size=n_t)] = 1.0
        return y
    if kind == "first_vs_rest":
        y = -np.ones((n_t, n_classes))
        y[:, 0] = 1.0
        return y
    return np.where(rng.random((n_t, n_classes)) < 0.5, 1.0, -1.0)


def regime_of(d: Draws) -> Regime:
    """The regime of one set of draws (:mod:`core.glue_regime`), v*_k = t_k − A λ*_k."""
    points = d.points.cpu().numpy()
    t = d.t.cpu().numpy()
    v = (d.t - d.cone).cpu().numpy()
    separable = separable_fraction(points, d.classes.cpu().numpy(), d.dichotomies, t, v)
    return judge(separable, saturated_fraction(t, v), points.shape[0], points.shape[1])


def _summarize(d: Draws, workers: int = 1) -> GlueResult:
    n_of_t = d.n_of_t.cpu().numpy()
    n_t = n_of_t.size
    n_crit = float(n_of_t.mean())
    regime: list[Regime] = []
    # The regime check runs on the geometry's threads, beside its chunks (glue_geometry).
    beside = lambda: regime.append(regime_of(d))  # noqa: E731
    geo = effective_geometry(d.points, d.classes, d.n_classes, d.t, d.lam, n_crit, workers, beside=beside)
    return GlueResult(
        capacity=d.n_classes / n_crit if n_crit > 0 else math.inf,
        n_crit=n_crit,
        n_crit_sem=float(n_of_t.std(ddof=1) / math.sqrt(n_t)) if n_t > 1 else 0.0,
        dimension=geo.dimension,
        radius=geo.radius,
        utilization=geo.utilization,
        center_alignment=geo.center_alignment,
        axis_alignment=geo.axis_alignment,
        center_axis_alignment=geo.center_axis_alignment,
        center_norm=geo.center_norm * d.scale,
        n_classes=d.n_classes,
        n_points=int(d.points.shape[0]),
        n_t=n_t,
        n_fallback=d.n_fallback,
        regime=regime[0],
    )


def _combine(runs: list[GlueResult]) -> GlueResult:
    """Each marker combined over the repeats, its standard deviation (ddof=1) over them in ``std``.

    A repeat's D_eff, Ψ_eff, R_eff and α are functions of its draw means: D = E[a]/P, Ψ = E[b]/N_crit,
    R² = E[b]/(E[a] − E[b]), α = P/N_crit. Every repeat has n_t draws, so the mean over repeats of
    E[a], E[b] and N_crit is the mean over all draws pooled. D (linear in E[a]), N_crit and the
    alignments are plain means; α, Ψ and R are recomputed from the pooled means rather than averaged,
    which keeps α = Ψ (1 + R⁻²) / D exact for the combined result as for each repeat.
    """
    if len(runs) == 1:
        return runs[0]
    values = {m: np.array([getattr(r, m) for r in runs]) for m in MARKERS}
    means: dict[str, Any] = {m: float(v.mean()) for m, v in values.items()}
    p = runs[0].n_classes
    n_crit = means["n_crit"]
    mean_a = means["dimension"] * p
    mean_b = float(np.mean([r.utilization * r.n_crit for r in runs]))
    means["capacity"] = p / n_crit if n_crit > 0 else math.inf
    means["utilization"] = mean_b / n_crit if n_crit > 0 else 0.0
    means["radius"] = radius_of(mean_a, mean_b)
    sem = math.sqrt(sum(r.n_crit_sem**2 for r in runs)) / len(runs)
    with np.errstate(invalid="ignore"):  # an infinite marker (α at N_crit = 0) has no spread: NaN
        stds = {m: float(v.std(ddof=1)) for m, v in values.items()}
    regimes = [r.regime for r in runs if r.regime is not None]
    return replace(
        runs[0],
        **means,
        n_crit_sem=sem,
        repeats=len(runs),
        std=stds,
        n_fallback=sum(r.n_fallback for r in runs),
        regime=combine(regimes) if regimes else None,
    )
