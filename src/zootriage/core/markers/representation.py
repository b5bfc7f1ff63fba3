"""Representation baselines on penultimate features (docs/method.md, "The markers").

X is (n, N) with rows = samples; class codes are 0..P-1. Covariances use 1/(n−1) unless stated.
Each marker computes in torch float64 on ``device`` (``core.device.resolve_device``: CUDA when
present), which ``compute_markers`` passes on.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from zootriage.core.markers._linalg import (
    BLOCK_BYTES,
    Device,
    as_tensor,
    block_rows,
    centred,
    class_sums,
    covariance_eigenvalues,
    variance_floor,
)
from zootriage.core.markers.pairwise import mean_pairwise_angle, mean_pairwise_distance
from zootriage.core.markers.registry import MarkerUndefined, register_marker

DENSITY_THRESHOLD = 1e-6
RANK_RELATIVE_CUTOFF = 1e-3
NC1_RELATIVE_CUTOFF = 1e-3


@register_marker(
    needs=("features",),
    higher_is_better=True,
    description="Effective number of principal components, (Σλ)²/Σλ²",
    group="representation",
)
def participation_ratio(*, features: np.ndarray, device: Device = None) -> float:
    """PR = (Σ_i λ_i)² / Σ_i λ_i², λ = eigenvalues of the covariance (1/(n−1)).

    Lies in [1, min(n−1, N)]; equals N for an isotropic population. Undefined for zero variance.
    """
    x = as_tensor(features, device)
    eig = covariance_eigenvalues(x)
    total = float(eig.sum())
    if total <= variance_floor(x):
        raise MarkerUndefined("participation ratio is undefined: the features have zero variance")
    return total**2 / float(torch.sum(eig**2))


@register_marker(
    needs=("features", "labels"),
    higher_is_better=None,
    description="Neural-collapse NC1: within-class over between-class variability",
    group="representation",
)
def nc1(*, features: np.ndarray, labels: np.ndarray, device: Device = None) -> float:
    """NC1 = (1/C) tr(Σ_W Σ_B⁺)  (Papyan, Han & Donoho, PNAS 2020).

    Σ_W = (1/n) Σ_c Σ_{i∈c} (x_i−μ_c)(x_i−μ_c)ᵀ, Σ_B = (1/C) Σ_c (μ_c−μ_G)(μ_c−μ_G)ᵀ with μ_G the
    mean of all rows; Σ_B⁺ keeps the eigenvalues λ > 1e-3·λ_max (Σ_B⁺ = 0 when Σ_B = 0).
    Σ_B = BᵀB with B = (μ_c−μ_G)/√C, so with B = U S Vᵀ: tr(Σ_W Σ_B⁺) = Σ_k v_kᵀΣ_W v_k / s_k²,
    and v_kᵀΣ_W v_k = (1/n) Σ_i ⟨x_i−μ_{c(i)}, v_k⟩²: no N×N matrix is formed.
    """
    x, y = as_tensor(features, device), as_tensor(labels, device, torch.int64)
    n_classes = int(y.max()) + 1
    means = class_sums(x, y) / torch.bincount(y, minlength=n_classes)[:, None]
    between = (means - x.mean(dim=0)) / np.sqrt(n_classes)
    _, s, vt = torch.linalg.svd(between, full_matrices=False)
    lam = s**2
    if float(lam[0]) <= variance_floor(x):
        return 0.0
    keep = lam > NC1_RELATIVE_CUTOFF * lam[0]
    projected = (x - means[y]) @ vt[keep].T  # (n, k)
    within = torch.sum(projected**2, dim=0) / x.shape[0]
    return float(torch.sum(within / lam[keep]) / n_classes)


@register_marker(
    needs=("features",),
    higher_is_better=True,
    description="Number of singular values of the centred features at least 1e-3 of the largest",
    group="representation",
)
def numerical_rank(*, features: np.ndarray, device: Device = None) -> float:
    """rank = #{i : σ_i ≥ 1e-3·σ_1}, σ = singular values of the centred data (tunnel effect).

    σ_i² = (n−1)·λ_i with λ the covariance eigenvalues, so the test is λ_i ≥ 1e-6·λ_1.
    Centred data that is zero up to rounding has rank 0.
    """
    x = as_tensor(features, device)
    eig = covariance_eigenvalues(x)
    if float(eig[0]) <= variance_floor(x):
        return 0.0
    sigma = eig.sqrt()
    return float(torch.count_nonzero(sigma >= RANK_RELATIVE_CUTOFF * sigma[0]))


@register_marker(
    needs=("features",),
    higher_is_better=None,
    description="Fraction of feature entries with |x| > 1e-6 (the paper's 'sparsity')",
    group="representation",
)
def activation_density(*, features: np.ndarray, device: Device = None) -> float:
    """density = (1/(nN)) #{(i, j) : |x_ij| > 1e-6}."""
    x = as_tensor(features, device)
    return float(torch.count_nonzero(x.abs() > DENSITY_THRESHOLD)) / x.numel()


@register_marker(
    needs=("features",),
    higher_is_better=None,
    description="Mean absolute off-diagonal entry of the feature covariance",
    group="representation",
)
def mean_abs_covariance(
    *, features: np.ndarray, max_block_bytes: int = BLOCK_BYTES, device: Device = None
) -> float:
    """(1/(N(N−1))) Σ_{a≠b} |Σ_ab|, Σ = X_cᵀX_c/(n−1).

    Σ is built one block of columns at a time (N × b floats). Undefined for N = 1.
    """
    dim = features.shape[1]
    if dim < 2:
        raise MarkerUndefined("mean absolute covariance needs at least 2 features")
    xc = centred(as_tensor(features, device))
    denom = features.shape[0] - 1
    step = block_rows(dim, max_block_bytes)
    off_diagonal = xc.new_zeros(())
    for start in range(0, dim, step):
        stop = min(start + step, dim)
        cov = (xc.T @ xc[:, start:stop]).abs_().div_(denom)  # (N, b): columns start..stop of Σ
        off_diagonal += cov.sum() - cov[start:stop].trace()
    return float(off_diagonal) / (dim * (dim - 1))


@register_marker(
    needs=("features",),
    higher_is_better=None,
    description="Mean Euclidean distance over sample pairs",
    group="representation",
)
def mean_distance(*, features: np.ndarray, device: Device = None) -> float:
    """(2/(n(n−1))) Σ_{i<j} ‖x_i − x_j‖ (chunked: memory bounded by a block of rows)."""
    return mean_pairwise_distance(features, device=device)


@register_marker(
    needs=("features",),
    higher_is_better=None,
    description="Mean angle (radians) over sample pairs",
    group="representation",
)
def mean_angle(*, features: np.ndarray, device: Device = None) -> float:
    """(2/(n(n−1))) Σ_{i<j} arccos(cos(x_i, x_j)) (chunked); undefined if a row is zero."""
    return mean_pairwise_angle(features, device=device)


def _per_class_mean(
    features: np.ndarray, labels: np.ndarray, pair_mean: Callable[..., float], device: Device
) -> float:
    counts = np.bincount(labels)
    values = [pair_mean(features[labels == c], device=device) for c in np.flatnonzero(counts >= 2)]
    if not values:
        raise MarkerUndefined("within-class pairs need a class with at least 2 points")
    return float(np.mean(values))


@register_marker(
    needs=("features", "labels"),
    higher_is_better=None,
    description="Mean Euclidean distance over pairs within a class, averaged over classes",
    group="representation",
)
def within_class_distance(*, features: np.ndarray, labels: np.ndarray, device: Device = None) -> float:
    """(1/|C₂|) Σ_{c∈C₂} mean_distance(X_c), C₂ = the classes with at least 2 points."""
    return _per_class_mean(features, labels, mean_pairwise_distance, device)


@register_marker(
    needs=("features", "labels"),
    higher_is_better=None,
    description="Mean angle over pairs within a class, averaged over classes",
    group="representation",
)
def within_class_angle(*, features: np.ndarray, labels: np.ndarray, device: Device = None) -> float:
    """(1/|C₂|) Σ_{c∈C₂} mean_angle(X_c), C₂ = the classes with at least 2 points."""
    return _per_class_mean(features, labels, mean_pairwise_angle, device)
