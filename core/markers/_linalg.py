"""Numerical helpers shared by the markers: centring, covariance spectra, the rounding floor."""

from __future__ import annotations

import numpy as np
from scipy import sparse

#: Working-set budget for chunked computations: a block of rows is sized to hold about this much.
BLOCK_BYTES = 64 * 2**20


def block_rows(n_cols: int, max_block_bytes: int = BLOCK_BYTES) -> int:
    """Rows per block so that a (rows, n_cols) float64 block takes at most ``max_block_bytes``."""
    return max(1, max_block_bytes // (8 * max(n_cols, 1)))


def centred(features: np.ndarray) -> np.ndarray:
    """X − mean over rows."""
    return features - features.mean(axis=0)


def variance_floor(features: np.ndarray) -> float:
    """Variance that centring alone can produce by rounding.

    A constant column, centred in float64, leaves residues of at most about n·ε·max|x| per entry,
    so a total variance below 2·N·(n·ε·max|x|)² is indistinguishable from zero.
    """
    n, dim = features.shape
    scale = float(np.max(np.abs(features))) if features.size else 0.0
    return 2.0 * dim * (n * np.finfo(np.float64).eps * scale) ** 2


def covariance_eigenvalues(features: np.ndarray) -> np.ndarray:
    """Eigenvalues of the covariance Σ = X_cᵀX_c/(n−1), descending, clipped at 0.

    The non-zero ones are computed from the smaller of X_cᵀX_c (N×N) and X_cX_cᵀ (n×n); the rest
    are zero, so only min(n, N) values are returned.
    """
    xc = centred(features)
    n, dim = xc.shape
    gram = xc.T @ xc if dim <= n else xc @ xc.T
    eig = np.linalg.eigvalsh(gram)[::-1] / (n - 1)
    return np.clip(eig, 0.0, None)


def class_sums(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(P, N) matrix whose row c is Σ_{i: label i = c} x_i, i.e. YᵀX with Y the (n, P) one-hot
    indicator matrix (kept sparse, so no n×P array is formed)."""
    n = labels.shape[0]
    indicator = sparse.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(int(labels.max()) + 1, n))
    return np.asarray(indicator @ features)


def indicator_projections(features: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Singular values s (descending) of X = U S Vᵀ and z = UᵀY, (r, P), Y the one-hot labels.

    Computed from the smaller Gram matrix, XᵀX = V S² Vᵀ (then UᵀY = S⁻¹Vᵀ(XᵀY)) or XXᵀ = U S² Uᵀ,
    which costs one n·N·min(n, N) product instead of an SVD. Directions with s² ≤ m·ε·s_1²
    (m the Gram size) are below the rounding level of the Gram eigenvalues and are dropped.
    """
    n, dim = features.shape
    if dim <= n:
        lam, v = np.linalg.eigh(features.T @ features)
    else:
        lam, u = np.linalg.eigh(features @ features.T)
    order = np.argsort(lam)[::-1]
    lam = lam[order]
    keep = lam > max(lam[0], 0.0) * min(n, dim) * np.finfo(np.float64).eps
    s = np.sqrt(lam[keep])
    if dim <= n:
        z = (v[:, order[keep]].T @ class_sums(features, labels).T) / s[:, None]
    else:
        z = class_sums(u[:, order[keep]], labels).T
    return s, z
