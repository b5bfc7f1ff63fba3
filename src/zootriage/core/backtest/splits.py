"""The two tasks' fixed image splits, drawn once with the study's seed and saved with the results.

- Task A: Animal-MNIST classes 0–4 give the ID training and ID test images (disjoint, drawn from one
  seeded permutation per class); classes 5–9 are the OOD set.
- Task B: MNIST train (ID training), MNIST test (ID test); all 10 Animal-MNIST classes are the OOD set.

The OOD set is split in stratified halves (seed 0 of the study): the probe is fitted on one and scored
on the other. Indices point into the packaged arrays (``core.data.open_builtin``), so the splits can be
checked against the data by anyone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from zootriage.core.backtest.config import StudyConfig, TaskName
from zootriage.core.study.datasets import _arrays, balanced_indices
from zootriage.core.study.probe import stratified_split

ANIMALS = "animal-mnist"


@dataclass(frozen=True)
class Images:
    x: torch.Tensor
    y: torch.Tensor


@dataclass(frozen=True)
class TaskData:
    """A task's images and the indices they came from (``sources`` names each set's array)."""

    train: Images
    test: Images
    ood: Images
    probe_fit: np.ndarray
    probe_score: np.ndarray
    indices: dict[str, np.ndarray]
    sources: dict[str, str]

    @property
    def n_classes(self) -> int:
        return int(self.train.y.max()) + 1

    def splits_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {k: v.tolist() for k, v in self.indices.items()}
        record["probe_fit"] = self.probe_fit.tolist()
        record["probe_score"] = self.probe_score.tolist()
        record["sources"] = self.sources
        return record


def _images(name: str, split: str, idx: np.ndarray) -> Images:
    images, labels = _arrays(name, split)
    x = torch.as_tensor(images[idx], dtype=torch.float32).unsqueeze(1) / 255.0
    return Images(x, torch.as_tensor(labels[idx], dtype=torch.int64))


def _disjoint(
    labels: np.ndarray, classes: range, sizes: tuple[int, int], seed: int
) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    first, second = [], []
    for cls in classes:
        members = rng.permutation(np.flatnonzero(labels == cls))
        if members.size < sum(sizes):
            raise ValueError(f"class {cls} has {members.size} images; the split needs {sum(sizes)}")
        first.append(members[: sizes[0]])
        second.append(members[sizes[0] : sum(sizes)])
    return np.sort(np.concatenate(first)), np.sort(np.concatenate(second))


def _in_classes(labels: np.ndarray, classes: range, per_class: int, seed: int) -> np.ndarray:
    idx = balanced_indices(labels, per_class, seed)
    idx = idx[np.isin(labels[idx], list(classes))]
    counts = np.bincount(labels[idx], minlength=max(classes) + 1)[list(classes)]
    if counts.min() < per_class:
        raise ValueError(f"the OOD set needs {per_class} images per class, found {counts.min()}")
    return idx


def load_task(task: TaskName, config: StudyConfig) -> TaskData:
    """Draw (from ``config.seed``) and load task ``task``'s images."""
    cfg, seed = config.task(task), config.seed
    animal_labels = _arrays(ANIMALS, "all")[1]
    if task == "A":
        train, test = _disjoint(animal_labels, range(5), (cfg.train_per_class, cfg.test_per_class), seed)
        ood = _in_classes(animal_labels, range(5, 10), cfg.ood_per_class, seed)
        sources = {"train": f"{ANIMALS}:all", "test": f"{ANIMALS}:all", "ood": f"{ANIMALS}:all"}
        train_set, test_set = _images(ANIMALS, "all", train), _images(ANIMALS, "all", test)
    else:
        train = balanced_indices(_arrays("mnist", "train")[1], cfg.train_per_class, seed)
        test = balanced_indices(_arrays("mnist", "test")[1], cfg.test_per_class, seed)
        ood = _in_classes(animal_labels, range(10), cfg.ood_per_class, seed)
        sources = {"train": "mnist:train", "test": "mnist:test", "ood": f"{ANIMALS}:all"}
        train_set, test_set = _images("mnist", "train", train), _images("mnist", "test", test)
    ood_set = _images(ANIMALS, "all", ood)
    fit, score = stratified_split(ood_set.y.numpy(), 0.5, seed)
    return TaskData(
        train_set, test_set, ood_set, fit, score, {"train": train, "test": test, "ood": ood}, sources
    )
