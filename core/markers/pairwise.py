"""Means over sample pairs i<j, computed in row blocks so memory is bounded by a block, not n².

Each block of b rows is compared with the rows at and after it through one matrix product
(b × n floats, b sized to ``BLOCK_BYTES``); only pairs with j > i are summed, so every pair is visited
once. Besides the block, memory holds one centred (or normalised) copy of the features.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from core.markers._linalg import BLOCK_BYTES, block_rows
from core.markers.registry import MarkerUndefined

# Turns a block of Gram entries G[i, j] (rows start..stop against rows start..n) into f(i, j) in place.
BlockTransform = Callable[[np.ndarray, int, int], None]


def _upper_pair_sum(rows: np.ndarray, transform: BlockTransform, max_block_bytes: int) -> float:
    """Σ_{i<j} f(i, j) over the rows, one block of rows at a time."""
    n = rows.shape[0]
    step = block_rows(n, max_block_bytes)
    total = 0.0
    for start in range(0, n, step):
        stop = min(start + step, n)
        block = rows[start:stop] @ rows[start:].T  # (b, n - start)
        transform(block, start, stop)
        width = stop - start  # inside the diagonal square keep j > i only
        total += float(np.triu(block[:, :width], k=1).sum()) + float(block[:, width:].sum())
    return total


def mean_pairwise_distance(features: np.ndarray, max_block_bytes: int = BLOCK_BYTES) -> float:
    """(2 / (n(n−1))) Σ_{i<j} ‖x_i − x_j‖₂.

    Uses ‖x−y‖² = ‖x‖² + ‖y‖² − 2⟨x, y⟩ on centred rows (distances do not change under a shift,
    and centring shrinks the cancellation in that identity); near-duplicates are exact to ~√ε·‖x‖.
    """
    n = features.shape[0]
    if n < 2:
        raise MarkerUndefined("a mean over pairs needs at least 2 rows")
    xc = features - features.mean(axis=0)
    sq = np.einsum("ij,ij->i", xc, xc)

    def to_distance(block: np.ndarray, start: int, stop: int) -> None:
        block *= -2.0
        block += sq[start:stop, None]
        block += sq[None, start:]
        np.clip(block, 0.0, None, out=block)  # rounding can push ‖x−y‖² of near-duplicates below 0
        np.sqrt(block, out=block)

    return _upper_pair_sum(xc, to_distance, max_block_bytes) / (n * (n - 1) / 2)


def mean_pairwise_angle(features: np.ndarray, max_block_bytes: int = BLOCK_BYTES) -> float:
    """(2 / (n(n−1))) Σ_{i<j} arccos(⟨x_i, x_j⟩ / (‖x_i‖‖x_j‖)), in radians.

    Undefined when a row is zero (its direction is). Cosines are clipped to [−1, 1]; the angle of
    duplicates is then exact to ~√ε.
    """
    n = features.shape[0]
    if n < 2:
        raise MarkerUndefined("a mean over pairs needs at least 2 rows")
    norms = np.linalg.norm(features, axis=1)
    zero = int(np.count_nonzero(norms == 0.0))
    if zero:
        raise MarkerUndefined(f"angles are undefined: {zero} row(s) have zero norm")
    unit = features / norms[:, None]

    def to_angle(block: np.ndarray, start: int, stop: int) -> None:
        np.clip(block, -1.0, 1.0, out=block)
        np.arccos(block, out=block)

    return _upper_pair_sum(unit, to_angle, max_block_bytes) / (n * (n - 1) / 2)
