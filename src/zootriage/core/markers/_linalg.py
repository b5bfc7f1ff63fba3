"""Numerical helpers shared by the markers: tensors on the device, centring, covariance spectra,
the rounding floor.

The heavy markers compute in torch float64 on the device ``compute_markers`` resolved
(``core.device.resolve_device``: CUDA when present); these helpers take and return tensors.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from zootriage.core.device import resolve_device

#: Working-set budget for chunked computations: a block of rows is sized to hold about this much.
BLOCK_BYTES = 64 * 2**20

EPS = torch.finfo(torch.float64).eps

#: Where a marker computes: a device name, a ``torch.device``, or None for ``resolve_device``'s choice.
Device = str | torch.device | None


def block_rows(n_cols: int, max_block_bytes: int = BLOCK_BYTES) -> int:
    """Rows per block so that a (rows, n_cols) float64 block takes at most ``max_block_bytes``."""
    return max(1, max_block_bytes // (8 * max(n_cols, 1)))


def as_tensor(array: Any, device: Device, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """``array`` as a ``dtype`` tensor on ``resolve_device(device)``; no copy where it already is one
    (a read-only numpy array is shared as it is: the markers never write to their inputs)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The given NumPy array is not writable", UserWarning)
        return torch.as_tensor(array, dtype=dtype, device=resolve_device(device))


def centred(features: torch.Tensor) -> torch.Tensor:
    """X − mean over rows."""
    return features - features.mean(dim=0)


def variance_floor(features: torch.Tensor) -> float:
    """Variance that centring alone can produce by rounding.

    A constant column, centred in float64, leaves residues of at most about n·ε·max|x| per entry,
    so a total variance below 2·N·(n·ε·max|x|)² is indistinguishable from zero.
    """
    n, dim = features.shape
    scale = float(features.abs().max()) if features.numel() else 0.0
    return 2.0 * dim * (n * EPS * scale) ** 2


def covariance_eigenvalues(features: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of the covariance Σ = X_cᵀX_c/(n−1), descending, clipped at 0.

    The non-zero ones are computed from the smaller of X_cᵀX_c (N×N) and X_cX_cᵀ (n×n); the rest
    are zero, so only min(n, N) values are returned.
    """
    xc = centred(features)
    n, dim = xc.shape
    gram = xc.T @ xc if dim <= n else xc @ xc.T
    eig = torch.linalg.eigvalsh(gram).flip(0) / (n - 1)
    return eig.clamp(min=0.0)


def class_sums(features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """(P, N) matrix whose row c is Σ_{i: label i = c} x_i, i.e. YᵀX with Y the (n, P) one-hot
    indicator matrix (accumulated by index, so no n×P array is formed)."""
    sums = features.new_zeros((int(labels.max()) + 1, features.shape[1]))
    return sums.index_add_(0, labels, features)


def indicator_projections(features: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Singular values s (descending) of X = U S Vᵀ and z = UᵀY, (r, P), Y the one-hot labels.

    Computed from the smaller Gram matrix, XᵀX = V S² Vᵀ (then UᵀY = S⁻¹Vᵀ(XᵀY)) or XXᵀ = U S² Uᵀ,
    which costs one n·N·min(n, N) product instead of an SVD. Directions with s² ≤ m·ε·s_1²
    (m the Gram size) are below the rounding level of the Gram eigenvalues and are dropped.
    """
    n, dim = features.shape
    gram = features.T @ features if dim <= n else features @ features.T
    lam, vectors = torch.linalg.eigh(gram)
    lam, vectors = lam.flip(0), vectors.flip(1)  # descending
    keep = lam > lam[0].clamp(min=0.0) * min(n, dim) * EPS
    s = lam[keep].sqrt()
    if dim <= n:
        z = (vectors[:, keep].T @ class_sums(features, labels).T) / s[:, None]
    else:
        z = class_sums(vectors[:, keep], labels).T
    return s, z
