"""Brute-force manifold capacity by simulation: the method-independent ground truth for GLUE.

Project the n points into m dimensions with a random Gaussian map, draw a random one-vs-rest
dichotomy, and test whether some direction w separates it through the origin: y_μ⟨w, x⟩ > 0 for
every point x of every manifold μ. Strict separability is scale-free, so it is the linear
feasibility problem y_μ⟨w, x⟩ ≥ 1, solved as an LP with scipy's HiGHS. The fraction of separable
trials rises with m; the dimension m* where it crosses ½ plays the role of N_crit, and the simulated
capacity is α_sim = P / m*. Unlike docs/method.md's integer rule (the smallest m with P(sep) ≥ ½) we
interpolate linearly between the two integers around the crossing, which removes the rounding of
α_sim = P/m for small m.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize


def separable(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether some w satisfies y_i⟨w, x_i⟩ ≥ 1 for every row x_i (an LP feasibility test)."""
    a_ub = -(y[:, None] * x)
    res = scipy.optimize.linprog(
        np.zeros(x.shape[1]),
        A_ub=a_ub,
        b_ub=-np.ones(x.shape[0]),
        bounds=[(None, None)] * x.shape[1],
        method="highs",
    )
    return bool(res.status == 0)


def separable_fraction(
    features: np.ndarray, classes: np.ndarray, m: int, trials: int, rng: np.random.Generator
) -> float:
    """Fraction of ``trials`` random projections to ``m`` dimensions whose random one-vs-rest
    dichotomy is linearly separable through the origin."""
    n_classes = int(classes.max()) + 1
    hits = 0
    for _ in range(trials):
        proj = features @ rng.standard_normal((features.shape[1], m))
        y = np.where(classes == rng.integers(n_classes), 1.0, -1.0)
        hits += separable(proj, y)
    return hits / trials


def simulated_capacity(
    features: np.ndarray, labels: np.ndarray, *, trials: int = 100, seed: int = 0, max_dim: int | None = None
) -> float:
    """α_sim = P / m*, with m* the interpolated dimension where P(separable) crosses ½."""
    _, classes = np.unique(labels, return_inverse=True)
    n_classes = int(classes.max()) + 1
    rng = np.random.default_rng(seed)
    x = np.asarray(features, dtype=np.float64)
    top = max_dim or x.shape[0]
    previous = 0.0
    for m in range(1, top + 1):
        frac = separable_fraction(x, classes, m, trials, rng)
        if frac >= 0.5:
            crossing = (m - 1) + (0.5 - previous) / (frac - previous) if m > 1 else 1.0
            return n_classes / crossing
        previous = frac
    raise ValueError(f"the dichotomies never became separable up to {top} dimensions")
