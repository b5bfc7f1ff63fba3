"""Study 3's task splits (docs/study/PLAN-3.md, "Data, tasks"): task C is MNIST digits 0–4 (train/test)
with mnist:val digits 5–9 as OOD; task A is drawn by the registered study's code; both are seeded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zootriage.core.backtest.config import Study3Config, load_study3_config
from zootriage.core.backtest.splits import _arrays, _disjoint, _in_classes, load_study3_task

STUDIES = Path(__file__).resolve().parents[2] / "studies"


@pytest.fixture(scope="module")
def config() -> Study3Config:
    return load_study3_config(STUDIES / "confirmatory.toml")


def test_task_c_uses_exactly_the_plans_classes_and_splits(config: Study3Config) -> None:
    task = config.task("C")
    data = load_study3_task(task, config.seed)
    assert data.sources == {"train": "mnist:train", "test": "mnist:test", "ood": "mnist:val"}
    assert np.bincount(data.train.y.numpy()).tolist() == [600] * 5
    assert np.bincount(data.test.y.numpy()).tolist() == [200] * 5
    ood = data.ood.y.numpy()
    assert sorted(set(ood.tolist())) == [5, 6, 7, 8, 9] and np.bincount(ood)[5:].tolist() == [400] * 5
    # The indices point at the packaged arrays' labels, and the OOD halves are 200 per class.
    for name, split in (("train", "train"), ("test", "test")):
        labels = _arrays("mnist", split)[1][data.indices[name]]
        assert sorted(set(labels.tolist())) == [0, 1, 2, 3, 4]
    assert (_arrays("mnist", "val")[1][data.indices["ood"]] >= 5).all()
    assert np.bincount(ood[data.probe_fit])[5:].tolist() == [200] * 5
    assert np.bincount(ood[data.probe_score])[5:].tolist() == [200] * 5
    assert not set(data.probe_fit.tolist()) & set(data.probe_score.tolist())


def test_task_a_is_the_registered_draw(config: Study3Config) -> None:
    data = load_study3_task(config.task("A"), config.seed)
    labels = _arrays("animal-mnist", "all")[1]
    train, test = _disjoint(labels, range(5), (600, 200), 0)
    assert np.array_equal(data.indices["train"], train) and np.array_equal(data.indices["test"], test)
    assert not set(train.tolist()) & set(test.tolist())
    assert np.array_equal(data.indices["ood"], _in_classes(labels, range(5, 10), 400, 0))
    assert np.array_equal(data.train.y.numpy(), labels[train])


def test_splits_are_seeded(config: Study3Config) -> None:
    task = config.task("C")
    a, b, c = load_study3_task(task, 0), load_study3_task(task, 0), load_study3_task(task, 1)
    assert a.splits_record() == b.splits_record()
    assert not np.array_equal(a.indices["train"], c.indices["train"])


def test_non_contiguous_classes_are_refused(config: Study3Config) -> None:
    task = config.task("C")
    odd = task.model_copy(update={"ood": task.ood.model_copy(update={"classes": [5, 7, 9]})})
    with pytest.raises(ValueError, match="contiguous"):
        load_study3_task(odd, 0)
