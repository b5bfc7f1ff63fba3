"""Study 3's primary outcome ``probe20`` (docs/study/PLAN-3.md, "Primary outcome").

On the frozen penultimate features of a task's OOD images, split in stratified halves (fit / score):

- each of ``draws`` draws takes ``shots`` images per class from the fit half, with numpy
  ``default_rng([0, draw])`` over the fit half's labels only, so every model meets the same draws;
- a multinomial logistic regression (:func:`core.study.probe.probe_accuracy`, features standardised
  with the drawn subset's mean and SD) is fitted on them and scored on the whole score half;
- the outcome is the mean accuracy over the draws.

C is chosen once per task on the random-init models only: 25 % of the fit half is held out as a
validation split (stratified, seed 0), the same draws are taken from the remaining 75 %, each C of the
grid is scored on the validation split, and the best mean over draws and models wins (ties go to the
smaller C, as :func:`core.backtest.probes.choose_task_c`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from zootriage.core.backtest.probes import choose_task_c
from zootriage.core.study.probe import ProbeSplit, probe_accuracy, stratified_split

DRAW_SEED = 0


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


def choose_c(
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
