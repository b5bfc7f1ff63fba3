"""The OOD linear probe: how well frozen features separate classes the model never saw.

A multinomial logistic regression on standardised features, fitted by full-batch L-BFGS in float64
on ``core.device.resolve_device`` (the GPU when present). With n training rows, weights W and bias b
it minimises

    L(W, b) = (1/n) Σ_i −log softmax(W x_i + b)_{y_i} + ‖W‖² / (2 C n),

which is scikit-learn's ``LogisticRegression(C=C)`` objective divided by C·n (same minimiser). The
regularisation C is chosen once, on a split of the probe's training part (:func:`choose_c`), and then
held fixed for every model of a study so that probe accuracies are comparable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from zootriage.core.device import resolve_device

MAX_ITER = 500


@dataclass(frozen=True)
class ProbeSplit:
    """Features and labels of a probe's training part and held-out part."""

    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray


def stratified_split(labels: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test): each class split at ``test_fraction`` after a seeded shuffle."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    train, test = [], []
    for cls in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == cls))
        cut = max(1, round(len(members) * test_fraction))
        if cut >= len(members):
            raise ValueError(f"class {cls} has {len(members)} rows: too few to split")
        test.append(members[:cut])
        train.append(members[cut:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def split_features(features: np.ndarray, labels: np.ndarray, test_fraction: float, seed: int) -> ProbeSplit:
    train, test = stratified_split(labels, test_fraction, seed)
    return ProbeSplit(features[train], labels[train], features[test], labels[test])


def _check(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y)
    if xa.ndim != 2 or ya.shape != (xa.shape[0],) or xa.shape[0] == 0:
        raise ValueError(f"features must be (n, N) and labels (n,), got {xa.shape} and {ya.shape}")
    if not np.isfinite(xa).all():
        raise ValueError("probe features must be finite")
    return xa, ya


def probe_accuracy(split: ProbeSplit, c: float, *, device: str | torch.device | None = None) -> float:
    """Held-out accuracy of the probe fitted with regularisation ``c`` on the training part."""
    if not c > 0:
        raise ValueError(f"the probe's C must be > 0, got {c}")
    train_x, train_y = _check(split.train_x, split.train_y)
    test_x, test_y = _check(split.test_x, split.test_y)
    if train_x.shape[1] != test_x.shape[1]:
        raise ValueError("train and test features differ in width")
    classes, train_codes = np.unique(train_y, return_inverse=True)
    if classes.size < 2:
        raise ValueError("the probe needs at least two classes in its training part")
    dev = resolve_device(device)
    mean = train_x.mean(axis=0)
    scale = train_x.std(axis=0)
    scale[scale < 1e-12] = 1.0
    xt = torch.as_tensor((train_x - mean) / scale, device=dev)
    yt = torch.as_tensor(train_codes, device=dev)
    weight = torch.zeros(xt.shape[1], classes.size, dtype=torch.float64, device=dev, requires_grad=True)
    bias = torch.zeros(classes.size, dtype=torch.float64, device=dev, requires_grad=True)
    penalty = 1.0 / (2.0 * c * xt.shape[0])
    opt = torch.optim.LBFGS(
        [weight, bias],
        max_iter=MAX_ITER,
        tolerance_grad=1e-9,
        tolerance_change=1e-12,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(xt @ weight + bias, yt) + penalty * (weight * weight).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        xs = torch.as_tensor((test_x - mean) / scale, device=dev)
        predicted = classes[(xs @ weight + bias).argmax(dim=1).cpu().numpy()]
    return float(np.mean(predicted == test_y))


def choose_c(
    split: ProbeSplit,
    grid: Sequence[float],
    *,
    val_fraction: float = 0.25,
    seed: int = 0,
    device: str | torch.device | None = None,
) -> tuple[float, dict[float, float]]:
    """Pick C from ``grid`` by accuracy on a validation split of the probe's training part only
    (the held-out part is never looked at); ties go to the smaller C, the stronger regulariser."""
    if not grid:
        raise ValueError("the C grid is empty")
    inner = split_features(split.train_x, split.train_y, val_fraction, seed)
    scores = {float(c): probe_accuracy(inner, float(c), device=device) for c in sorted(grid)}
    best = max(scores, key=lambda c: (scores[c], -c))
    return best, scores
