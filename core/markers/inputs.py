"""Validation of ``compute_markers``' inputs, done once at the boundary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class MarkerInputs:
    """Validated inputs: float64 ``features`` (n, N); ``classes``, the labels mapped to 0..P−1;
    ``logits`` (n, C) float64 or None; ``logit_labels``, the labels as column indices of the
    logits, or None when there are no logits or they do not share the labels' class space."""

    features: np.ndarray
    classes: np.ndarray
    logits: np.ndarray | None
    logit_labels: np.ndarray | None


def _to_numpy(name: str, value: Any, dtype: type | None) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} cannot be read as a numeric array: {err}") from None


def _finite_matrix(name: str, value: Any, n_rows: int | None) -> np.ndarray:
    array = _to_numpy(name, value, np.float64)
    if array.ndim != 2 or array.shape[1] == 0:
        raise ValueError(f"{name} must be a 2-D array (samples × columns), got shape {array.shape}")
    if n_rows is not None and array.shape[0] != n_rows:
        raise ValueError(f"{name} have {array.shape[0]} rows but features have {n_rows}")
    bad = int(np.count_nonzero(~np.isfinite(array).all(axis=1)))
    if bad:
        raise ValueError(f"{name} contain NaN or inf values (in {bad} rows)")
    return array


def validate_inputs(features: Any, labels: Any, logits: Any, logits_match_labels: bool) -> MarkerInputs:
    """Check shapes, finiteness and labels; raise ``ValueError`` saying what is wrong.

    Every class needs at least 2 points and there must be at least 2 classes: markers of class
    manifolds mean nothing otherwise. Labels may be any values (ints, strings); when logits are
    given and ``logits_match_labels`` is true they must be integer column indices of the logits.
    """
    x = _finite_matrix("features", features, None)
    y = _to_numpy("labels", labels, None)
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise ValueError(
            f"labels must be 1-D with one entry per feature row ({x.shape[0]}), got shape {y.shape}"
        )
    try:
        values, classes = np.unique(y, return_inverse=True)
    except TypeError as err:
        raise ValueError(f"labels must be mutually comparable values (ints or strings): {err}") from None
    if values.size < 2:
        raise ValueError(f"need at least 2 classes, got {values.size}")
    counts = np.bincount(classes)
    if counts.min() < 2:
        lonely = [str(v) for v, c in zip(values, counts, strict=True) if c < 2][:5]
        raise ValueError(f"every class needs at least 2 points; classes with one point: {', '.join(lonely)}")
    z = None if logits is None else _finite_matrix("logits", logits, x.shape[0])
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
    return MarkerInputs(
        features=x, classes=classes.astype(np.int64).ravel(), logits=z, logit_labels=logit_labels
    )
