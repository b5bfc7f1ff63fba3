"""Spectral markers from the self-supervised literature: RankMe and α-ReQ (docs/method.md).

Both read only the singular spectrum of the penultimate features X (n, N), rows = samples, and so
are unchanged by a rotation of feature space and by a global rescaling. They compute in torch
float64 on ``device`` (``core.device.resolve_device``: CUDA when present), which
``compute_markers`` passes on; the spectrum comes from the smaller Gram matrix, as for
``participation_ratio``.
"""

from __future__ import annotations

import numpy as np
import torch

from zootriage.core.markers._linalg import EPS, Device, as_tensor, covariance_eigenvalues, variance_floor
from zootriage.core.markers.registry import MarkerUndefined, register_marker

#: RankMe's ε, added to every normalised singular value (Garrido et al. 2023 use 1e-7).
RANKME_EPS = 1e-7
#: α-ReQ fits the eigenvalues λ_k ≥ 1e-6·λ_1 (σ_k ≥ 1e-3·σ_1, the ``numerical_rank`` cut-off).
ALPHA_RELATIVE_CUTOFF = 1e-6
#: The fewest eigenvalues a decay fit is made on.
ALPHA_MIN_POINTS = 3


def singular_values(features: torch.Tensor) -> torch.Tensor:
    """The m = min(n, N) singular values of X as it is (not centred), descending, from the
    eigenvalues of the smaller Gram matrix XᵀX or XXᵀ. Eigenvalues σ² ≤ m·ε·σ_1² are below the
    rounding level of the Gram's eigendecomposition and are set to 0, so that rank-deficient
    features give the same spectrum on every device."""
    n, dim = features.shape
    gram = features.T @ features if dim <= n else features @ features.T
    sigma2 = torch.linalg.eigvalsh(gram).flip(0)
    sigma2 = torch.where(sigma2 > sigma2[0].clamp(min=0.0) * min(n, dim) * EPS, sigma2, 0.0)
    return sigma2.sqrt()


@register_marker(
    needs=("features",),
    higher_is_better=True,
    description="RankMe: exp of the entropy of the normalised singular values (smooth effective rank)",
    group="representation",
)
def rankme(*, features: np.ndarray, device: Device = None) -> float:
    """RankMe(X) = exp(−Σ_k p_k log p_k),  p_k = σ_k / Σ_j σ_j + ε,  ε = 1e-7
    (Garrido, Balestriero, Najman & LeCun, ICML 2023; Roy & Vetterli's effective rank plus ε).

    σ = the min(n, N) singular values of the features as given: the paper scores the embedding
    matrix without centring, and so does this. RankMe lies between about 1 and m = min(n, N): it is
    r when r singular values are equal and the rest zero, e.g. ≈ N for n ≫ N isotropic Gaussian
    rows, up to the ε term's shift, of order ε·m²·log m (+0.14 at m = r = 512). Undefined for
    all-zero features.
    """
    x = as_tensor(features, device)
    sigma = singular_values(x)
    total = float(sigma.sum())
    if total <= 0.0:
        raise MarkerUndefined("RankMe is undefined: the features are all zero")
    p = sigma / total + RANKME_EPS
    return float(torch.exp(-torch.sum(p * torch.log(p))))


@register_marker(
    needs=("features",),
    higher_is_better=None,
    description="α-ReQ: decay exponent α of the covariance eigenspectrum, λ_k ∝ k^(−α)",
    group="representation",
)
def alpha_req(*, features: np.ndarray, device: Device = None) -> float:
    """α-ReQ (Agrawal, Mondal, Ghosh & Richards, NeurIPS 2022): the eigenvalues λ_k of the feature
    covariance Σ = X_cᵀX_c/(n−1), descending, are fitted as λ_k ≈ c·k^(−α) by ordinary least
    squares in log–log,

        α = −Σ_k (u_k − ū)(v_k − v̄) / Σ_k (u_k − ū)²,   u_k = log k,  v_k = log λ_k,

    over k = 1..K, K = #{k : λ_k ≥ 1e-6·λ_1} (the singular values that ``numerical_rank`` counts:
    below that the spectrum is rounding or sampling noise and its logarithm is unbounded).
    The paper finds transfer best at α near 1: smaller α is a flat, noise-like spectrum, larger α a
    collapsed one, so no direction is preferred. Undefined with fewer than 3 eigenvalues to fit
    (including zero variance).
    """
    x = as_tensor(features, device)
    eig = covariance_eigenvalues(x)
    if float(eig[0]) <= variance_floor(x):
        raise MarkerUndefined("α-ReQ is undefined: the features have zero variance")
    lam = eig[eig >= ALPHA_RELATIVE_CUTOFF * eig[0]]
    if lam.numel() < ALPHA_MIN_POINTS:
        raise MarkerUndefined(
            f"α-ReQ needs at least {ALPHA_MIN_POINTS} eigenvalues above 1e-6 of the largest, "
            f"got {lam.numel()}"
        )
    u = torch.log(torch.arange(1, lam.numel() + 1, dtype=lam.dtype, device=lam.device))
    v = torch.log(lam)
    du = u - u.mean()
    return float(-torch.sum(du * (v - v.mean())) / torch.sum(du**2))
