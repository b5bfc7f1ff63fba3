"""The OOD linear probe agrees with scikit-learn's logistic regression; its splits and C choice."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from zootriage.core.backtest.probes import (
    ProbeSplit,
    choose_c,
    probe_accuracy,
    split_features,
    stratified_split,
)


def _blobs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((4, 12)) * 1.2
    labels = np.repeat(np.arange(4), 60)
    return centres[labels] + rng.standard_normal((240, 12)) * 2.0, labels


@pytest.mark.parametrize("c", [0.05, 1.0])
def test_probe_matches_sklearn_logistic_regression(c: float) -> None:
    x, y = _blobs(0)
    split = split_features(x, y, 0.5, seed=0)
    scaler = StandardScaler().fit(split.train_x)
    reference = LogisticRegression(C=c, max_iter=5000, tol=1e-10).fit(
        scaler.transform(split.train_x), split.train_y
    )
    expected = reference.score(scaler.transform(split.test_x), split.test_y)
    assert probe_accuracy(split, c, device="cpu") == pytest.approx(expected, abs=1.5 / len(split.test_y))


def test_split_is_stratified_disjoint_and_seeded() -> None:
    labels = np.repeat(np.arange(3), 10)
    train, test = stratified_split(labels, 0.3, seed=1)
    assert not set(train) & set(test) and len(train) + len(test) == 30
    assert np.bincount(labels[test]).tolist() == [3, 3, 3]
    assert np.array_equal(test, stratified_split(labels, 0.3, seed=1)[1])


def test_choose_c_uses_the_grid_and_bad_input_raises() -> None:
    x, y = _blobs(1)
    split = split_features(x, y, 0.5, seed=0)
    best, scores = choose_c(split, [0.01, 1.0], device="cpu")
    assert best in (0.01, 1.0) and scores[best] == max(scores.values())
    with pytest.raises(ValueError, match="C must be > 0"):
        probe_accuracy(split, 0.0)
    with pytest.raises(ValueError, match="two classes"):
        probe_accuracy(ProbeSplit(x[:5], np.zeros(5), x[:5], np.zeros(5)), 1.0)
