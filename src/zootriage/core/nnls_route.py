"""Which route the batched NNLS solver (``core.nnls``) takes for a point cloud: plain arithmetic,
shared by the solver and by the cost model that admission runs before any data is read
(``core.glue_cost``), so that estimating a job's cost imports neither torch nor scipy."""

from __future__ import annotations

# Largest point count whose n × n Gram matrix the solver forms (8192² float64 = 512 MB).
GRAM_POINTS_MAX = 8192


def uses_gram(n: int, r: int) -> bool:
    """Whether ``"auto"`` takes the Gram route for n points of rank r. Per step and draw it costs
    |S|·n against the primal route's 2·n·r, plus n²·r once, so it is the faster one whenever K fits:
    it is taken up to ``GRAM_POINTS_MAX`` points (K then ≤ 512 MB), and past that only while n ≤ 2r
    (then K is no bigger than the point matrix's own products)."""
    return n <= GRAM_POINTS_MAX or n <= 2 * r
