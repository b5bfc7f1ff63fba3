"""Boundary checks shared by every entry point of core that takes features and labels."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def as_array(name: str, value: Any, dtype: type | None) -> np.ndarray:
    """``value`` (numpy, array-like or torch tensor on any device) as a numpy array."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} cannot be read as a numeric array: {err}") from None


def finite_matrix(name: str, value: Any, n_rows: int | None = None) -> np.ndarray:
    """A non-empty 2-D float64 array of finite values (with ``n_rows`` rows when given)."""
    array = as_array(name, value, np.float64)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (samples × columns), got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} are empty (shape {array.shape})")
    if n_rows is not None and array.shape[0] != n_rows:
        raise ValueError(f"{name} have {array.shape[0]} rows but features have {n_rows}")
    bad = int(np.count_nonzero(~np.isfinite(array).all(axis=1)))
    if bad:
        raise ValueError(f"{name} contain NaN or inf values (in {bad} rows)")
    return array


def class_labels(labels: Any, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels of any comparable values → (the raw labels, class indices 0..P−1 as int64).

    Class manifolds need at least 2 classes of at least 2 points each: a ``ValueError`` says which
    requirement fails (and names the lonely classes).
    """
    y = as_array("labels", labels, None)
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise ValueError(f"labels must be 1-D with one entry per feature row ({n_rows}), got shape {y.shape}")
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
    return y, classes.astype(np.int64).ravel()
