"""The study's image sets as float tensors (n, 1, 28, 28) in [0, 1]: MNIST (ID) and Animal-MNIST (OOD).

Both come from installed packages through ``core.data.open_builtin`` (README.md, "Datasets"), so the study
needs no network. Subsets are drawn class-balanced with a seeded RNG.
"""

from __future__ import annotations

import numpy as np
import torch

from zootriage.core.data.builtin import open_builtin
from zootriage.core.data.images import ArrayLoader


def _arrays(name: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    images = open_builtin(name, split)
    if not isinstance(images.loader, ArrayLoader):
        raise ValueError(f"builtin:{name} is not held in memory; the study needs its arrays")
    return images.loader.images, images.labels


def balanced_indices(labels: np.ndarray, per_class: int | None, seed: int) -> np.ndarray:
    """Up to ``per_class`` seeded indices of each class (all of them for ``None``), sorted."""
    if per_class is not None and per_class < 1:
        raise ValueError(f"per_class must be >= 1 or None, got {per_class}")
    rng = np.random.default_rng(seed)
    chosen = [rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in np.unique(labels)]
    return np.sort(np.concatenate(chosen))


def load(name: str, split: str, per_class: int | None, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Images (n, 1, 28, 28) float32 in [0, 1] and labels (n,) int64 of a builtin set."""
    images, labels = _arrays(name, split)
    idx = balanced_indices(labels, per_class, seed)
    x = torch.as_tensor(images[idx], dtype=torch.float32).unsqueeze(1) / 255.0
    return x, torch.as_tensor(labels[idx], dtype=torch.int64)
