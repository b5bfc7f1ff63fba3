"""Representation baselines on penultimate features (definitions: shared/GLUE.md, "Baseline markers").

X is (n, N) with rows = samples; class codes are 0..P-1. Covariances use 1/(n−1) unless stated.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from core.markers._linalg import (
    BLOCK_BYTES,
    block_rows,
    centred,
    class_sums,
    covariance_eigenvalues,
    variance_floor,
)
from core.markers.pairwise import mean_pairwise_angle, mean_pairwise_distance
from core.markers.registry import MarkerUndefined, register_marker

DENSITY_THRESHOLD = 1e-6
RANK_RELATIVE_CUTOFF = 1e-3
NC1_RELATIVE_CUTOFF = 1e-3


@register_marker(
    needs=("features",),
    higher_is_better=True,
    description="Effective number of principal components, (Σλ)²/Σλ²",
    group="representation",
)
def participation_ratio(*, features: np.ndarray) -> float:
    """PR = (Σ_i λ_i)² / Σ_i λ_i², λ = eigenvalues of the covariance (1/(n−1)).

    Lies in [1, min(n−1, N)]; equals N for an isotropic population. Undefined for zero variance.
    """
    eig = covariance_eigenvalues(features)
    if eig.sum() <= variance_floor(features):
        raise MarkerUndefined("participation ratio is undefined: the features have zero variance")
    return float(eig.sum() ** 2 / np.sum(eig**2))


@register_marker(
    needs=("features", "labels"),
    higher_is_better=None,
    description="Neural-collapse NC1: within-class over between-class variability",
    group="representation",
)
def nc1(*, features: np.ndarray, labels: np.ndarray) -> float:
    """NC1 = (1/C) tr(Σ_W Σ_B⁺)  (Papyan, Han & Donoho, PNAS 2020).

    Σ_W = (1/n) Σ_c Σ_{i∈c} (x_i−μ_c)(x_i−μ_c)ᵀ, Σ_B = (1/C) Σ_c (μ_c−μ_G)(μ_c−μ_G)ᵀ with μ_G the
    mean of all rows; Σ_B⁺ keeps the eigenvalues λ > 1e-3·λ_max (Σ_B⁺ = 0 when Σ_B = 0).
    Σ_B = BᵀB with B = (μ_c−μ_G)/√C, so with B = U S Vᵀ: tr(Σ_W Σ_B⁺) = Σ_k v_kᵀΣ_W v_k / s_k²,
    and v_kᵀΣ_W v_k = (1/n) Σ_i ⟨x_i−μ_{c(i)}, v_k⟩²: no N×N matrix is formed.
    """
    n_classes = int(labels.max()) + 1
    means = class_sums(features, labels) / np.bincount(labels, minlength=n_classes)[:, None]
    between = (means - features.mean(axis=0)) / np.sqrt(n_classes)
    _, s, vt = np.linalg.svd(between, full_matrices=False)
    lam = s**2
    if lam[0] <= variance_floor(features):
        return 0.0
    keep = lam > NC1_RELATIVE_CUTOFF * lam[0]
    projected = (features - means[labels]) @ vt[keep].T  # (n, k)
    within = np.sum(projected**2, axis=0) / features.shape[0]
    return float(np.sum(within / lam[keep]) / n_classes)


@register_marker(
    needs=("features",),
    higher_is_better=True,
    description="Number of singular values of the centred features at least 1e-3 of the largest",
    group="representation",
)
def numerical_rank(*, features: np.ndarray) -> float:
    """rank = #{i : σ_i ≥ 1e-3·σ_1}, σ = singular values of the centred data (tunnel effect).

    σ_i² = (n−1)·λ_i with λ the covariance eigenvalues, so the test is λ_i ≥ 1e-6·λ_1.
    Centred data that is zero up to rounding has rank 0.
    """
    eig = covariance_eigenvalues(features)
    if eig[0] <= variance_floor(features):
        return 0.0
    sigma = np.sqrt(eig)
    return float(np.count_nonzero(sigma >= RANK_RELATIVE_CUTOFF * sigma[0]))


@register_marker(
    needs=("features",),
    higher_is_better=None,
    description="Fraction of feature entries with |x| > 1e-6 (the paper's 'sparsity')",
    group="representation",
)
def activation_density(*, features: np.ndarray) -> float:
    """density = (1/(nN)) #{(i, j) : |x_ij| > 1e-6}."""
    return float(np.count_nonzero(np.abs(features) > DENSITY_THRESHOLD) / features.size)


@register_marker(
    needs=("features",),
    higher_is_better=None,
    description="Mean absolute off-diagonal entry of the feature covariance",
    group="representation",
)
def mean_abs_covariance(*, features: np.ndarray, max_block_bytes: int = BLOCK_BYTES) -> float:
    """(1/(N(N−1))) Σ_{a≠b} |Σ_ab|, Σ = X_cᵀX_c/(n−1).

    Σ is built one block of columns at a time (N × b floats). Undefined for N = 1.
    """
    dim = features.shape[1]
    if dim < 2:
        raise MarkerUndefined("mean absolute covariance needs at least 2 features")
    xc = centred(features)
    denom = features.shape[0] - 1
    step = block_rows(dim, max_block_bytes)
    off_diagonal = 0.0
    for start in range(0, dim, step):
        stop = min(start + step, dim)
        cov = np.abs(xc.T @ xc[:, start:stop]) / denom  # (N, b): columns start..stop of Σ
        off_diagonal += float(cov.sum()) - float(np.trace(cov[start:stop]))
    return off_diagonal / (dim * (dim - 1))


@register_marker(
    needs=("features",),
    higher_is_better=None,
    description="Mean Euclidean distance over sample pairs",
    group="representation",
)
def mean_distance(*, features: np.ndarray) -> float:
    """(2/(n(n−1))) Σ_{i<j} ‖x_i − x_j‖ (chunked: memory bounded by a block of rows)."""
    return mean_pairwise_distance(features)


@register_marker(
    needs=("features",),
    higher_is_better=None,
    description="Mean angle (radians) over sample pairs",
    group="representation",
)
def mean_angle(*, features: np.ndarray) -> float:
    """(2/(n(n−1))) Σ_{i<j} arccos(cos(x_i, x_j)) (chunked); undefined if a row is zero."""
    return mean_pairwise_angle(features)


def _per_class_mean(
    features: np.ndarray, labels: np.ndarray, pair_mean: Callable[[np.ndarray], float]
) -> float:
    counts = np.bincount(labels)
    values = [pair_mean(features[labels == c]) for c in np.flatnonzero(counts >= 2)]
    if not values:
        raise MarkerUndefined("within-class pairs need a class with at least 2 points")
    return float(np.mean(values))


@register_marker(
    needs=("features", "labels"),
    higher_is_better=None,
    description="Mean Euclidean distance over pairs within a class, averaged over classes",
    group="representation",
)
def within_class_distance(*, features: np.ndarray, labels: np.ndarray) -> float:
    """(1/|C₂|) Σ_{c∈C₂} mean_distance(X_c), C₂ = the classes with at least 2 points."""
    return _per_class_mean(features, labels, mean_pairwise_distance)


@register_marker(
    needs=("features", "labels"),
    higher_is_better=None,
    description="Mean angle over pairs within a class, averaged over classes",
    group="representation",
)
def within_class_angle(*, features: np.ndarray, labels: np.ndarray) -> float:
    """(1/|C₂|) Σ_{c∈C₂} mean_angle(X_c), C₂ = the classes with at least 2 points."""
    return _per_class_mean(features, labels, mean_pairwise_angle)
