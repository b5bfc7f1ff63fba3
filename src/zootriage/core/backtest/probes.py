"""The studies' outcomes: probes on frozen penultimate features of a task's OOD images.

- The linear probe: a multinomial logistic regression on standardised features, fitted by full-batch
  L-BFGS in float64 on ``core.device.resolve_device`` (the GPU when present). With n training rows,
  weights W and bias b it minimises

      L(W, b) = (1/n) Σ_i −log softmax(W x_i + b)_{y_i} + ‖W‖² / (2 C n),

  which is scikit-learn's ``LogisticRegression(C=C)`` objective divided by C·n (same minimiser).
- Study 2's outcome (docs/study/PLAN.md): the full probe, fitted on the OOD set's fit half and scored
  on the other half, at one C per task chosen by :func:`choose_task_c` on the random-init models only.
- Study 3's primary outcome ``probe20`` (docs/study/PLAN-3.md, "Primary outcome"): each of ``draws``
  draws takes ``shots`` images per class from the fit half, with numpy ``default_rng([0, draw])`` over
  the fit half's labels only (every model meets the same draws); the probe is fitted on them (features
  standardised with the drawn subset's mean and SD) and scored on the whole score half; the outcome is
  the mean accuracy over the draws. Its C (:func:`choose_probe20_c`): 25 % of the fit half is held out
  (stratified, seed 0), the same draws are taken from the remaining 75 %, each C is scored on the held
  out part, and the best mean over draws and random-init models wins (ties: the smaller C).
- Few-shot probes (secondary): nearest class mean on standardised features. Each of ``episodes``
  seeded episodes draws ``shots`` support images per class from the fit half; every image of the
  score half is a query, assigned to the class whose support mean is nearest in Euclidean distance.
  The episodes depend on the seed and the labels only, so every model meets the same episodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from zootriage.core.device import resolve_device

MAX_ITER = 500
DRAW_SEED = 0


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


def task_c_scores(
    splits: Sequence[ProbeSplit],
    grid: Sequence[float],
    *,
    val_fraction: float,
    seed: int,
    device: torch.device,
) -> dict[float, float]:
    """Mean validation accuracy of every C over the given (random-init) models' probe splits."""
    per_model = [choose_c(s, grid, val_fraction=val_fraction, seed=seed, device=device)[1] for s in splits]
    return {float(c): float(np.mean([scores[float(c)] for scores in per_model])) for c in sorted(grid)}


def choose_task_c(scores: dict[float, float]) -> float:
    """The C with the best mean validation accuracy; ties go to the smaller C (stronger penalty)."""
    return max(scores, key=lambda c: (scores[c], -c))


def linear_probe(split: ProbeSplit, c: float, device: torch.device) -> float:
    return probe_accuracy(split, c, device=device)


def few_shot_accuracy(split: ProbeSplit, shots: int, episodes: int, seed: int, device: torch.device) -> float:
    """Mean query accuracy of the nearest-class-mean classifier over the seeded episodes."""
    mean = split.train_x.mean(axis=0)
    scale = split.train_x.std(axis=0)
    scale[scale < 1e-12] = 1.0
    support = torch.as_tensor((split.train_x - mean) / scale, device=device)
    queries = torch.as_tensor((split.test_x - mean) / scale, device=device)
    classes = np.unique(split.train_y)
    members = [np.flatnonzero(split.train_y == c) for c in classes]
    if min(m.size for m in members) < shots:
        raise ValueError(f"the fit half has fewer than {shots} images of some class")
    truth = torch.as_tensor(np.searchsorted(classes, split.test_y), device=device)
    rng = np.random.default_rng([seed, shots])
    correct = []
    for _ in range(episodes):
        chosen = np.stack([rng.choice(m, size=shots, replace=False) for m in members])
        centres = support[torch.as_tensor(chosen, device=device)].mean(dim=1)
        predicted = torch.cdist(queries, centres).argmin(dim=1)
        correct.append(float((predicted == truth).double().mean()))
    return float(np.mean(correct))


def draws(labels: np.ndarray, shots: int, n_draws: int) -> list[np.ndarray]:
    """The fixed draws: for draw d, ``shots`` indices (into ``labels``) per class from
    ``default_rng([0, d])``, classes in ascending order."""
    classes = np.unique(labels)
    members = [np.flatnonzero(labels == c) for c in classes]
    if min(m.size for m in members) < shots:
        raise ValueError(f"some class has fewer than {shots} images to draw from")
    out = []
    for d in range(n_draws):
        rng = np.random.default_rng([DRAW_SEED, d])
        out.append(np.sort(np.concatenate([rng.choice(m, size=shots, replace=False) for m in members])))
    return out


def few_shot_probe(split: ProbeSplit, c: float, shots: int, n_draws: int, device: torch.device) -> float:
    """Mean score-half accuracy of the probe fitted on each draw of ``shots`` per class."""
    scores = [
        probe_accuracy(
            ProbeSplit(split.train_x[idx], split.train_y[idx], split.test_x, split.test_y), c, device=device
        )
        for idx in draws(split.train_y, shots, n_draws)
    ]
    return float(np.mean(scores))


def validation_split(split: ProbeSplit, val_fraction: float) -> ProbeSplit:
    """The fit half cut into 75 % (new fit part) and 25 % validation (stratified, seed 0)."""
    keep, val = stratified_split(split.train_y, val_fraction, DRAW_SEED)
    return ProbeSplit(split.train_x[keep], split.train_y[keep], split.train_x[val], split.train_y[val])


def choose_probe20_c(
    splits: Sequence[ProbeSplit],
    grid: Sequence[float],
    *,
    shots: int,
    n_draws: int,
    val_fraction: float,
    device: torch.device,
) -> tuple[float, dict[float, float]]:
    """(chosen C, mean validation accuracy per C) over the random-init models' probe splits."""
    if not splits:
        raise ValueError("C is chosen on random-init models; none were given")
    held = [validation_split(s, val_fraction) for s in splits]
    scores = {
        float(c): float(np.mean([few_shot_probe(h, float(c), shots, n_draws, device) for h in held]))
        for c in sorted(grid)
    }
    return choose_task_c(scores), scores
