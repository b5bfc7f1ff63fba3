"""An NCTI-style neural-collapse transferability score (docs/method.md, "Markers from the field").

NCTI (Wang, Luo, Zheng, Huang & Baktashmotlagh, ICCV 2023) scores how close a model's features on
the target classes already are to neural collapse with three terms: within-class variability
collapse, closeness of the class means to a simplex (SELI) geometry measured by a nuclear norm, and
agreement with the nearest-centre classifier. The paper min–max normalises each term over the set
of candidate models and sums them, which makes a model's score depend on the other candidates. A
marker here is one model's number, so each term is instead normalised by construction to [0, 1]
(1 = collapsed) and the three are summed; the exact formula is in ``ncti``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from zootriage.core.markers._linalg import (
    BLOCK_BYTES,
    Device,
    as_tensor,
    block_rows,
    class_sums,
    variance_floor,
)
from zootriage.core.markers.registry import MarkerUndefined, register_marker
from zootriage.core.markers.representation import nc1


class NctiTerms(NamedTuple):
    """The three terms of ``ncti``, each in [0, 1]."""

    variability: float
    simplex: float
    nearest_centre: float


def nearest_centre_accuracy(
    features: torch.Tensor, labels: torch.Tensor, means: torch.Tensor, max_block_bytes: int = BLOCK_BYTES
) -> float:
    """(1/n) #{i : argmin_c ‖x_i − μ_c‖ = y_i}, ties to the lowest class index. Distances are
    formed as differences (not ‖x‖² − 2xᵀμ + ‖μ‖²), one block of rows at a time, so equal means
    give equal distances exactly."""
    n = features.shape[0]
    step = block_rows(means.numel(), max_block_bytes)
    hits = 0
    for start in range(0, n, step):
        block = features[start : start + step]
        dist = torch.sum((block[:, None, :] - means[None, :, :]) ** 2, dim=2)  # (b, C)
        hits += int(torch.count_nonzero(torch.argmin(dist, dim=1) == labels[start : start + step]))
    return hits / n


def ncti_terms(*, features: np.ndarray, labels: np.ndarray, device: Device = None) -> NctiTerms:
    """The terms of ``ncti`` (its docstring has the formulas); labels are class codes 0..C−1."""
    x, y = as_tensor(features, device), as_tensor(labels, device, torch.int64)
    n_classes = int(y.max()) + 1
    counts = torch.bincount(y, minlength=n_classes)
    if n_classes < 2 or bool(torch.any(counts == 0)):
        raise MarkerUndefined("NCTI needs at least 2 classes, each with a point")
    means = class_sums(x, y) / counts[:, None]
    ncc = nearest_centre_accuracy(x, y, means)
    between = means - means.mean(dim=0)
    if float(torch.sum(between**2)) / n_classes <= variance_floor(x):
        return NctiTerms(variability=0.0, simplex=0.0, nearest_centre=ncc)
    variability = 1.0 / (1.0 + nc1(features=features, labels=labels, device=device))
    s = torch.linalg.svdvals(between)
    simplex = float(torch.sum(s) ** 2 / ((n_classes - 1) * torch.sum(s**2)))
    return NctiTerms(variability=variability, simplex=min(simplex, 1.0), nearest_centre=ncc)


@register_marker(
    needs=("features", "labels"),
    higher_is_better=True,
    description="NCTI-style collapse score: variability collapse + simplex means + nearest-centre accuracy",
    group="transferability",
)
def ncti(*, features: np.ndarray, labels: np.ndarray, device: Device = None) -> float:
    """NCTI-style score = S_vc + S_seli + S_ncc ∈ [0, 3], higher = closer to neural collapse.

    With class means μ_c, their mean μ̄ = (1/C) Σ_c μ_c and M the (C × N) matrix of rows μ_c − μ̄:

    - S_vc = 1 / (1 + NC1), NC1 = (1/C) tr(Σ_W Σ_B⁺) as in the ``nc1`` marker: 1 when classes have
      collapsed to their means, → 0 as within-class scatter swamps the between-class one;
    - S_seli = ‖M‖_*² / ((C − 1) ‖M‖_F²) = (Σσ_k)² / ((C − 1) Σσ_k²), σ = singular values of M: the
      nuclear norm relative to its largest value for M's rank ≤ C − 1, which it reaches exactly when
      the C − 1 non-zero σ_k are equal, i.e. the centred means form a simplex ETF (up to scale);
      1/(C − 1) when the means lie on a line;
    - S_ncc = accuracy of the nearest-class-centre classifier on the same points (ties to the lowest
      class index).

    When the class means coincide (between-class variance at the rounding floor) S_vc = S_seli = 0:
    no class separation at all; S_ncc is then the share of the lowest-index class. This departs
    from the paper (module docstring): the terms are not min–max normalised across candidate
    models, S_vc is a bounded transform of NC1 rather than of class-wise logit nuclear norms, and
    S_ncc counts hits instead of averaging the true-class posterior.
    """
    terms = ncti_terms(features=features, labels=labels, device=device)
    return float(sum(terms))
