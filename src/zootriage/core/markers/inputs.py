"""Validation of ``compute_markers``' inputs, done once at the boundary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zootriage.core.inputs import class_labels, finite_matrix


@dataclass(frozen=True)
class MarkerInputs:
    """Validated inputs: float64 ``features`` (n, N); ``classes``, the labels mapped to 0..P−1;
    ``logits`` (n, C) float64 or None; ``logit_labels``, the labels as column indices of the
    logits, or None when there are no logits or they do not share the labels' class space."""

    features: np.ndarray
    classes: np.ndarray
    logits: np.ndarray | None
    logit_labels: np.ndarray | None


def marker_inputs(features: Any, labels: Any, logits: Any, logits_match_labels: bool) -> MarkerInputs:
    """Check shapes, finiteness and labels; raise ``ValueError`` saying what is wrong.

    Every class needs at least 2 points and there must be at least 2 classes: markers of class
    manifolds mean nothing otherwise. Labels may be any values (ints, strings); when logits are
    given and ``logits_match_labels`` is true they must be integer column indices of the logits.
    """
    x = finite_matrix("features", features)
    y, classes = class_labels(labels, x.shape[0])
    z = None if logits is None else finite_matrix("logits", logits, x.shape[0])
    logit_labels = None
    if z is not None and logits_match_labels:
        if y.dtype.kind not in "iu":
            raise ValueError(
                f"labels must be integer column indices of the logits, got dtype {y.dtype}; "
                "pass logits_match_labels=False if the model's classes are not the labels"
            )
        outside = sorted(set(y[(y < 0) | (y >= z.shape[1])].tolist()))
        if outside:
            raise ValueError(f"labels must index the {z.shape[1]} logit columns; out of range: {outside[:5]}")
        logit_labels = y.astype(np.int64)
    return MarkerInputs(features=x, classes=classes, logits=z, logit_labels=logit_labels)
