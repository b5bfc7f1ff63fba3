"""Transferability estimators computed on the ID features and labels: LogME and H-score.

Both need, for the one-hot label matrix Y, the singular values of the (raw or centred) features and
the coordinates z = UᵀY of the labels in the left singular basis (``indicator_projections``), which
runs in torch float64 on ``device`` (``core.device.resolve_device``: CUDA when present). LogME's
fixed-point iteration then works on those (r × K) coordinates alone, in numpy: it is a few thousand
numbers, too small to gain from the device.
"""

from __future__ import annotations

import numpy as np
import torch

from zootriage.core.markers._linalg import Device, as_tensor, centred, indicator_projections, variance_floor
from zootriage.core.markers.registry import MarkerUndefined, register_marker

LOGME_TOL = 1e-10
LOGME_MAX_ITER = 1000
UNBOUNDED_RTOL = 1e-9


def _log_evidence(
    alpha: np.ndarray, beta: np.ndarray, s: np.ndarray, z: np.ndarray, outside: np.ndarray, n: int
) -> np.ndarray:
    """L(α, β) per class, with D/2 log α − ½ log|A| = −½ Σ_i log1p(βσ_i²/α) (the (D − r) zero
    singular values cancel), which stays exact when α grows without bound (features that carry
    no signal for a class drive α → ∞ while L converges)."""
    ratio = beta * s[:, None] ** 2 / alpha  # (r, K): βσ_i²/α
    m2 = np.sum((beta * s[:, None] * z / (alpha * (1 + ratio))) ** 2, axis=0)
    res2 = np.sum((z / (1 + ratio)) ** 2, axis=0) + outside
    return (
        n / 2 * np.log(beta / (2 * np.pi))
        - beta / 2 * res2
        - alpha / 2 * m2
        - np.sum(np.log1p(ratio), axis=0) / 2
    )


@register_marker(
    needs=("features", "labels"),
    higher_is_better=True,
    description="LogME: per-sample log evidence of Bayesian linear regression on one-hot labels",
    group="transferability",
)
def logme(*, features: np.ndarray, labels: np.ndarray, device: Device = None) -> float:
    """LogME (You, Liu, Wang & Long, ICML 2021), features F (n×D) used as given, no bias.

    For each class k, y = the one-hot column k; the model y = Fw + ε, w ~ N(0, α⁻¹I), ε ~ N(0, β⁻¹I)
    has the log evidence

        L(α, β) = n/2 log β + D/2 log α − n/2 log 2π − β/2 ‖Fm − y‖² − α/2 ‖m‖² − ½ log|A|,
        A = αI + βFᵀF,  m = βA⁻¹Fᵀy,

    maximised by the paper's fixed point γ = Σ_i βσ_i²/(α + βσ_i²), α ← γ/‖m‖², β ← (n − γ)/‖Fm − y‖²
    (σ_i the singular values of F, started at α = β = 1, iterated until L/n changes < 1e-10).
    With F = U S Vᵀ and z = Uᵀy every term is a sum over σ_i: ‖m‖² = Σ (βσ_i z_i/(α+βσ_i²))²,
    ‖Fm − y‖² = Σ (α z_i/(α+βσ_i²))² + ‖y − Uz‖², log|A| = Σ_i log(α+βσ_i²) + (D − r) log α.
    LogME = (1/K) Σ_k L_k(α*, β*) / n. It is +∞ when some y lies in a proper subspace spanned by
    the features (rank F < n): a residual ‖y − UUᵀy‖² ≤ 1e-9·‖y‖² is reported as undefined.
    """
    n = features.shape[0]
    s_dev, z_dev = indicator_projections(as_tensor(features, device), as_tensor(labels, device, torch.int64))
    s, z = s_dev.cpu().numpy(), z_dev.cpu().numpy()
    counts = np.bincount(labels).astype(np.float64)  # ‖y_k‖²
    # ‖y_k − UUᵀy_k‖², exactly 0 when U is square (rank F = n): the difference of the two sums would
    # leave a rounding residue there that β (large when the features fit the labels) multiplies
    outside = np.clip(counts - np.sum(z**2, axis=0), 0.0, None) if s.size < n else np.zeros_like(counts)
    if s.size < n and np.any(outside <= UNBOUNDED_RTOL * counts):
        raise MarkerUndefined(
            "LogME is unbounded: a class indicator is an exact linear function of the features"
        )
    sig2 = (s**2)[:, None]  # (r, 1)
    alpha = np.ones(counts.size)
    beta = np.ones(counts.size)
    evidence = _log_evidence(alpha, beta, s, z, outside, n)
    for _ in range(LOGME_MAX_ITER):
        denom = alpha + beta * sig2  # (r, K)
        gamma = np.sum(beta * sig2 / denom, axis=0)
        # n − γ = (n − r) + Σ α/(α + βσ_i²), a sum of positive terms: as n − γ it cancelled to exactly
        # 0 when β ≫ α and r = n (every term of γ rounds to 1), and β = 0 made the next evidence −∞
        unexplained = (n - s.size) + np.sum(alpha / denom, axis=0)
        m2 = np.sum((beta * s[:, None] * z / denom) ** 2, axis=0)
        res2 = np.sum((alpha * z / denom) ** 2, axis=0) + outside
        alpha = np.where(m2 > 0, gamma / np.where(m2 > 0, m2, 1.0), alpha)  # α is free when m = 0
        beta = unexplained / res2
        previous, evidence = evidence, _log_evidence(alpha, beta, s, z, outside, n)
        if np.all(np.abs(evidence - previous) <= LOGME_TOL * n):
            break
    else:
        raise MarkerUndefined(
            f"LogME's evidence maximisation did not converge in {LOGME_MAX_ITER} iterations"
        )
    return float(np.mean(evidence) / n)


@register_marker(
    needs=("features", "labels"),
    higher_is_better=True,
    description="H-score: tr(cov(f)⁺ cov(E[f|y])), the class-discriminative share of the features",
    group="transferability",
)
def h_score(*, features: np.ndarray, labels: np.ndarray, device: Device = None) -> float:
    """H(f) = tr(cov(f)⁺ cov(E[f | y]))  (Bao, Li, Huang, Zheng & Zhong, ICIP 2019).

    Both covariances over the n samples with 1/(n−1); E[f | y] replaces each row by its class mean,
    so cov(E[f|y]) = Σ_c b_c b_cᵀ with b_c = √(n_c/(n−1)) (μ_c − μ) = X_cᵀ 1_c / √(n_c (n−1)).
    With the centred data X_c = U S Vᵀ, cov(f)⁺ = (n−1) V S⁻² Vᵀ, hence

        H = Σ_c ‖Uᵀ 1_c‖² / n_c,

    the share of each class indicator captured by the features' span. The authors' code inverts
    cov(f) with pinv(rcond=1e-15); that is below the rounding level of a Gram eigendecomposition,
    so here directions with s² ≤ m·ε·s_1² (m the Gram size) are dropped instead, which matters only
    for rank-deficient features. H ∈ [0, min(C−1, N)], invariant to invertible affine maps of the
    features, C − 1 for collapsed classes, 0 for constant features.
    """
    x, y = as_tensor(features, device), as_tensor(labels, device, torch.int64)
    xc = centred(x)
    if float(torch.sum(xc**2)) / (x.shape[0] - 1) <= variance_floor(x):
        return 0.0
    _, z = indicator_projections(xc, y)
    return float(torch.sum(torch.sum(z**2, dim=0) / torch.bincount(y)))
