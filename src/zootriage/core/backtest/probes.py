"""The study's outcomes on frozen penultimate features of the OOD images.

- Full linear probe (the primary outcome): multinomial logistic regression on standardised features
  (:func:`core.study.probe.probe_accuracy`), fitted on the OOD set's fit half and scored on the
  other half, at one C per task chosen by :func:`choose_task_c` on the random-init models only.
- Few-shot probes (secondary): nearest class mean on standardised features. Each of ``episodes``
  seeded episodes draws ``shots`` support images per class from the fit half; every image of the
  score half is a query, assigned to the class whose support mean is nearest in Euclidean distance.
  The episodes depend on the seed and the labels only, so every model meets the same episodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from zootriage.core.study.probe import ProbeSplit, choose_c, probe_accuracy


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
