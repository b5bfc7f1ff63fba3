"""What a GLUE analysis costs, before it runs: the model the admission check and the cost table use.

The batched Lawson–Hanson solver (core.nnls) adds one index per step, so a draw takes about s steps,
s the size of its final active set (≈ N(t), measured 33, 49, 55, 63 for P = 10, 50, 100, 200 on
ReLU-like data: fitted by s ≈ 18·P^¼, never above the rank r). One step of one draw touches

* the dense (n,)-long vectors of the batch (gradient, slots, signs): b·n, and
* the product with K = XXᵀ: s·n on the Gram route (core.nnls_route.uses_gram: n ≤ 8192 or n ≤ 2r),
  2·n·r through the coordinates on the primal route, counted as a·n·q with q = s or r;

the Gram route also forms K once, n²·r/2 multiply-adds, shared by the draws. After the solver, the
geometry (core.glue_geometry) touches each draw's support and active manifolds, h·(s·r + s³), and
the regime check (core.glue_regime.certify) one product over the n points per distinct dichotomy,
c·D·n·r with D = min(P, n_t) for one-vs-rest. So, in seconds of one core,

    T ≈ repeats · ( n_t · [ s · n · (a·q + b) + h·(s·r + s³) ]  +  [Gram route] · g·n²·r  +  c·D·n·r ),

with a, b, g, h, c fitted on the 2-core build machine (benchmarks/glue_cost.py prints the table of
docs/glue_cost.md). Memory is O(n·r + n_t·n) on the primal route: the float64 features and their
rotated, scaled copy (2·n·r), the (n_t, n) signs and solutions, never n². The feature width is
unknown before the model is loaded, so admission assumes ``ASSUMED_DIM``.
"""

from __future__ import annotations

from zootriage.core.nnls_route import uses_gram

# Seconds per multiply-add of the (point × coordinate) products, per touched point entry, per
# multiply-add of forming K, per geometry entry, per regime entry: fitted on P = 10..1000, M = 50,
# N = 512..2048 (see module doc).
_A = 4.4e-10
_B = 7e-8
_G = 1e-10
_H = 2e-8
_C = 4e-9
# The widest penultimate layer among the zoo's architectures (VGG's 4096-wide fc7).
ASSUMED_DIM = 4096


def active_set_size(classes: int, rank: int) -> float:
    """Expected active-set size s of one draw: the fit 18·P^¼, capped by the rank r."""
    return min(float(rank), 18.0 * classes**0.25)


def glue_seconds(
    classes: int, points_per_class: int, n_t: int, repeats: int = 1, dim: int = ASSUMED_DIM
) -> float:
    """Estimated single-core seconds of a GLUE analysis (solver, geometry and regime check) for
    P classes × M points in ``dim`` features."""
    n = classes * points_per_class
    r = min(n, dim)
    s = active_set_size(classes, r)
    gram_route = uses_gram(n, r)
    q = s if gram_route else float(r)
    per_draw = s * n * (_A * q + _B) + _H * (s * r + s**3)
    shared = _G * n * n * r if gram_route else 0.0
    regime = _C * min(classes, n_t) * n * r
    return repeats * (n_t * per_draw + shared + regime)


def peak_bytes(classes: int, points_per_class: int, n_t: int, dim: int = ASSUMED_DIM) -> int:
    """The analysis's largest float64 arrays: the features and their preprocessed copy (2·n·r), the
    (n_t, n) signs and solutions, and K (n², Gram route only). Linear in n on the primal route."""
    n = classes * points_per_class
    r = min(n, dim)
    gram = n * n if uses_gram(n, r) else 0
    return 8 * (2 * n * r + 2 * n_t * n + gram)
