"""Logit baselines against scikit-learn, scipy and plain loops."""

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.metrics import accuracy_score, roc_auc_score

from zootriage.core.markers import MarkerUndefined
from zootriage.core.markers import logits as lg


@pytest.fixture
def scored():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, size=200)
    z = rng.standard_normal((200, 5)) * 2.0
    z[np.arange(200), labels] += 1.5
    return z, labels


def test_id_accuracy_matches_sklearn(scored):
    z, y = scored
    assert lg.id_accuracy(logits=z, labels=y) == pytest.approx(accuracy_score(y, z.argmax(axis=1)))


def test_confidence_auroc_matches_sklearn(scored):
    z, y = scored
    p = softmax(z, axis=1)
    expected = roc_auc_score(z.argmax(axis=1) == y, p.max(axis=1))
    assert 0.5 < expected < 1.0
    assert lg.confidence_auroc(logits=z, labels=y) == pytest.approx(expected, rel=1e-12)


def test_confidence_auroc_is_one_when_confidence_separates_right_from_wrong():
    # Right rows: large top logit on the label; wrong rows: a small top logit elsewhere.
    labels = np.array([0, 1, 2, 0, 1, 2])
    z = np.array(
        [[9.0, 0, 0], [0, 8.0, 0], [0, 0, 7.0], [0, 0.5, 0], [0.4, 0, 0], [0, 0.3, 0]],
    )
    assert lg.confidence_auroc(logits=z, labels=labels) == 1.0
    assert lg.confidence_auroc(logits=-z, labels=np.array([1, 0, 0, 1, 1, 1])) == pytest.approx(
        roc_auc_score(np.argmax(-z, axis=1) == [1, 0, 0, 1, 1, 1], softmax(-z, axis=1).max(axis=1))
    )


def test_confidence_auroc_resolves_saturated_confidences():
    # max p rounds to 1.0 for every row, yet the order (and so the AUROC) is still defined.
    labels = np.array([0, 0, 0, 0])
    z = np.array([[60.0, 0.0], [50.0, 0.0], [0.0, 45.0], [0.0, 40.0]])  # right, right, wrong, wrong
    assert lg.confidence_auroc(logits=z, labels=labels) == 1.0


def test_confidence_auroc_undefined_when_all_right():
    z = np.eye(3) * 5
    with pytest.raises(MarkerUndefined, match="every prediction is right"):
        lg.confidence_auroc(logits=z, labels=np.arange(3))


def test_mean_confidence_and_entropy_match_scipy_softmax(scored):
    z, _ = scored
    p = softmax(z, axis=1)
    assert lg.mean_confidence(logits=z) == pytest.approx(p.max(axis=1).mean(), rel=1e-12)
    assert lg.entropy(logits=z) == pytest.approx(np.mean(-np.sum(p * np.log(p + 1e-12), axis=1)), rel=1e-12)


def test_logit_margin_matches_a_loop(scored):
    z, y = scored
    expected = np.mean([z[i, y[i]] - max(z[i, c] for c in range(5) if c != y[i]) for i in range(len(y))])
    assert lg.logit_margin(logits=z, labels=y) == pytest.approx(expected, rel=1e-12)


def test_energy_matches_direct_log_sum_exp(scored):
    z, _ = scored
    assert lg.energy(logits=z) == pytest.approx(np.mean(-np.log(np.exp(z).sum(axis=1))), rel=1e-12)


def test_large_logits_stay_finite():
    z = np.array([[1000.0, 999.0, -1000.0], [-1000.0, 1000.0, 0.0]])
    y = np.array([0, 0])
    assert lg.energy(logits=z) == pytest.approx(-(1000 + np.log1p(np.exp(-1.0)) + 1000) / 2)
    assert lg.mean_confidence(logits=z) == pytest.approx((1 / (1 + np.exp(-1.0)) + 1.0) / 2)
    assert np.isfinite(lg.entropy(logits=z))
    assert lg.logit_margin(logits=z, labels=y) == pytest.approx((1.0 - 2000.0) / 2)


def test_ties():
    # All logits equal: uniform softmax, argmax takes column 0.
    z = np.zeros((4, 3))
    y = np.array([0, 1, 2, 0])
    assert lg.id_accuracy(logits=z, labels=y) == 0.5
    assert lg.confidence_auroc(logits=z, labels=y) == 0.5  # all confidences tie
    assert lg.mean_confidence(logits=z) == pytest.approx(1 / 3)
    assert lg.entropy(logits=z) == pytest.approx(np.log(3), rel=1e-9)
    assert lg.logit_margin(logits=z, labels=y) == 0.0
    assert lg.energy(logits=z) == pytest.approx(-np.log(3))


def test_single_logit_column():
    z = np.ones((3, 1))
    y = np.zeros(3, dtype=int)
    with pytest.raises(MarkerUndefined, match="2 logit columns"):
        lg.logit_margin(logits=z, labels=y)
    assert lg.mean_confidence(logits=z) == 1.0
    assert lg.entropy(logits=z) == pytest.approx(0.0, abs=1e-11)
