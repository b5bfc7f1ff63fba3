"""Study 3's task splits (docs/study/PLAN-3.md, "Data, tasks and the outcome"), drawn once from the
study's seed and saved with the results.

A task names, for its ID training, ID test and OOD images, a packaged set (``dataset:split``), a class
list and images per class. The draws are the registered study's (:mod:`core.backtest.splits`):

- ID training and test from the same set: one seeded permutation per class, first ``train`` then
  ``test`` images, so the two are disjoint (task A: Animal-MNIST 0–4, 600 + 200 per class);
- from different sets: a seeded class-balanced draw from each (task C: ``mnist:train`` and
  ``mnist:test`` digits 0–4);
- OOD: a seeded class-balanced draw of the OOD classes (task A: Animal-MNIST 5–9; task C:
  ``mnist:val`` digits 5–9, a split no model trains on), then stratified halves (seed 0) for the probe.

ID labels are renumbered 0 … k − 1 in the order of the task's class list, so the head has k outputs.
"""

from __future__ import annotations

import numpy as np
import torch

from zootriage.core.backtest.splits import Images, TaskData, _disjoint, _in_classes
from zootriage.core.backtest.study3_config import ImageSet, TaskSpec
from zootriage.core.study.datasets import _arrays
from zootriage.core.study.probe import stratified_split


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
