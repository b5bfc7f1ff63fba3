"""Means over sample pairs i<j, computed in row blocks so memory is bounded by a block, not n².

Each block of b rows is compared with the rows at and after it through one matrix product
(b × n floats, b sized to ``BLOCK_BYTES``); only pairs with j > i are summed, so every pair is visited
once. Besides the block, memory holds one centred (or normalised) copy of the features. Everything
runs in torch float64 on ``device`` (``core.device.resolve_device``: CUDA when present).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from zootriage.core.markers._linalg import BLOCK_BYTES, Device, as_tensor, block_rows, centred
from zootriage.core.markers.registry import MarkerUndefined

# Turns a block of Gram entries G[i, j] (rows start..stop against rows start..n) into f(i, j) in place.
BlockTransform = Callable[[torch.Tensor, int, int], None]


def _upper_pair_sum(rows: torch.Tensor, transform: BlockTransform, max_block_bytes: int) -> float:
    """Σ_{i<j} f(i, j) over the rows, one block of rows at a time."""
    n = rows.shape[0]
    step = block_rows(n, max_block_bytes)
    total = rows.new_zeros(())
    for start in range(0, n, step):
        stop = min(start + step, n)
        block = rows[start:stop] @ rows[start:].T  # (b, n - start)
        transform(block, start, stop)
        width = stop - start  # inside the diagonal square keep j > i only
        total += block[:, :width].triu(1).sum() + block[:, width:].sum()
    return float(total)


def mean_pairwise_distance(
    features: np.ndarray, max_block_bytes: int = BLOCK_BYTES, *, device: Device = None
) -> float:
    """(2 / (n(n−1))) Σ_{i<j} ‖x_i − x_j‖₂.

    Uses ‖x−y‖² = ‖x‖² + ‖y‖² − 2⟨x, y⟩ on centred rows (distances do not change under a shift,
    and centring shrinks the cancellation in that identity); near-duplicates are exact to ~√ε·‖x‖.
    """
    n = features.shape[0]
    if n < 2:
        raise MarkerUndefined("a mean over pairs needs at least 2 rows")
    xc = centred(as_tensor(features, device))
    sq = torch.einsum("ij,ij->i", xc, xc)

    def to_distance(block: torch.Tensor, start: int, stop: int) -> None:
        block.mul_(-2.0).add_(sq[start:stop, None]).add_(sq[None, start:])
        block.clamp_(min=0.0).sqrt_()  # rounding can push ‖x−y‖² of near-duplicates below 0

    return _upper_pair_sum(xc, to_distance, max_block_bytes) / (n * (n - 1) / 2)


def mean_pairwise_angle(
    features: np.ndarray, max_block_bytes: int = BLOCK_BYTES, *, device: Device = None
) -> float:
    """(2 / (n(n−1))) Σ_{i<j} arccos(⟨x_i, x_j⟩ / (‖x_i‖‖x_j‖)), in radians.

    Undefined when a row is zero (its direction is). Cosines are clipped to [−1, 1]; the angle of
    duplicates is then exact to ~√ε.
    """
    n = features.shape[0]
    if n < 2:
        raise MarkerUndefined("a mean over pairs needs at least 2 rows")
    x = as_tensor(features, device)
    norms = torch.linalg.vector_norm(x, dim=1)
    zero = int(torch.count_nonzero(norms == 0.0))
    if zero:
        raise MarkerUndefined(f"angles are undefined: {zero} row(s) have zero norm")
    unit = x / norms[:, None]

    def to_angle(block: torch.Tensor, start: int, stop: int) -> None:
        block.clamp_(-1.0, 1.0).arccos_()

    return _upper_pair_sum(unit, to_angle, max_block_bytes) / (n * (n - 1) / 2)
