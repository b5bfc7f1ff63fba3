"""The studies' fixed image splits, drawn once with the study's seed and saved with the results.

Images are float tensors (n, 1, 28, 28) in [0, 1] from installed packages (``core.data.open_builtin``,
README.md "Datasets"; no network), drawn class-balanced with a seeded RNG.

Study 2 (docs/study/PLAN.md):

- Task A: Animal-MNIST classes 0–4 give the ID training and ID test images (disjoint, drawn from one
  seeded permutation per class); classes 5–9 are the OOD set.
- Task B: MNIST train (ID training), MNIST test (ID test); all 10 Animal-MNIST classes are the OOD set.

The OOD set is split in stratified halves (seed 0 of the study): the probe is fitted on one and scored
on the other. Indices point into the packaged arrays (``core.data.open_builtin``), so the splits can be
checked against the data by anyone.

Study 3 (docs/study/PLAN-3.md, "Data, tasks and the outcome", :func:`load_study3_task`): a task names,
for its ID training, ID test and OOD images, a packaged set (``dataset:split``), a class list and images
per class, and the draws are study 2's:

- ID training and test from the same set: one seeded permutation per class, first ``train`` then
  ``test`` images, so the two are disjoint (task A: Animal-MNIST 0–4, 600 + 200 per class);
- from different sets: a seeded class-balanced draw from each (task C: ``mnist:train`` and
  ``mnist:test`` digits 0–4);
- OOD: a seeded class-balanced draw of the OOD classes (task A: Animal-MNIST 5–9; task C:
  ``mnist:val`` digits 5–9, a split no model trains on), then stratified halves for the probe.

ID labels are renumbered 0 … k − 1 in the order of the task's class list, so the head has k outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from zootriage.core.backtest.config import ImageSet, StudyConfig, TaskName, TaskSpec
from zootriage.core.backtest.probes import stratified_split
from zootriage.core.data.builtin import open_builtin
from zootriage.core.data.images import ArrayLoader

ANIMALS = "animal-mnist"


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


def study2_task(task: TaskName, config: StudyConfig) -> TaskSpec:
    """Study 2's task ``task`` written as a study-3 task (the same draws: see the module docstring)."""
    cfg = config.task(task)
    ood = ImageSet(source=f"{ANIMALS}:all", classes=list(range(5, 10) if task == "A" else range(10)),
                   per_class=cfg.ood_per_class)  # fmt: skip
    if task == "A":
        train = ImageSet(source=f"{ANIMALS}:all", classes=list(range(5)), per_class=cfg.train_per_class)
        test = ImageSet(source=f"{ANIMALS}:all", classes=list(range(5)), per_class=cfg.test_per_class)
    else:
        train = ImageSet(source="mnist:train", classes=list(range(10)), per_class=cfg.train_per_class)
        test = ImageSet(source="mnist:test", classes=list(range(10)), per_class=cfg.test_per_class)
    return TaskSpec(name=task, train=train, test=test, ood=ood, points_per_class=cfg.points_per_class)


def load_task(task: TaskName, config: StudyConfig) -> TaskData:
    """Draw (from ``config.seed``) and load study 2's task ``task``."""
    return load_study3_task(study2_task(task, config), config.seed)


def _source(images: ImageSet) -> tuple[str, str]:
    name, _, split = images.source.partition(":")
    return name, split


def _classes(images: ImageSet) -> range:
    """The class list as a range (the registered draws take one); lists must be contiguous."""
    classes = sorted(images.classes)
    if classes != list(range(classes[0], classes[-1] + 1)):
        raise ValueError(f"{images.source}: class lists must be contiguous, got {images.classes}")
    return range(classes[0], classes[-1] + 1)


def _load(images: ImageSet, idx: np.ndarray, relabel: list[int] | None) -> Images:
    name, split = _source(images)
    x, labels = _arrays(name, split)
    y = labels[idx].astype(np.int64)
    if relabel is not None:
        y = np.searchsorted(np.asarray(relabel), y)
    return Images(torch.as_tensor(x[idx], dtype=torch.float32).unsqueeze(1) / 255.0, torch.as_tensor(y))


def _id_indices(task: TaskSpec, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if task.train.source == task.test.source:
        labels = _arrays(*_source(task.train))[1]
        train, test = _disjoint(
            labels, _classes(task.train), (task.train.per_class, task.test.per_class), seed
        )
        return train, test
    train = _in_classes(_arrays(*_source(task.train))[1], _classes(task.train), task.train.per_class, seed)
    test = _in_classes(_arrays(*_source(task.test))[1], _classes(task.test), task.test.per_class, seed)
    return train, test


def load_study3_task(task: TaskSpec, seed: int) -> TaskData:
    """Draw (from ``seed``) and load ``task``'s images; :meth:`TaskData.splits_record` saves them."""
    train, test = _id_indices(task, seed)
    ood_labels = _arrays(*_source(task.ood))[1]
    ood = _in_classes(ood_labels, _classes(task.ood), task.ood.per_class, seed)
    order = sorted(task.train.classes)
    train_set, test_set = _load(task.train, train, order), _load(task.test, test, order)
    ood_set = _load(task.ood, ood, None)
    fit, score = stratified_split(ood_set.y.numpy(), 0.5, seed)
    sources = {"train": task.train.source, "test": task.test.source, "ood": task.ood.source}
    return TaskData(
        train_set, test_set, ood_set, fit, score, {"train": train, "test": test, "ood": ood}, sources
    )
