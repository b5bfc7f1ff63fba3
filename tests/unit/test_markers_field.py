"""Markers from the field (RankMe, α-ReQ, NCTI-style collapse, ATC) against closed forms on
constructed data and against brute-force recomputations in plain numpy."""

import math

import numpy as np
import pytest
import torch

from zootriage.core.markers import MarkerUndefined, Protocol, compute_markers
from zootriage.core.markers.atc import atc, atc_predicted_accuracy, atc_threshold, negative_entropy
from zootriage.core.markers.collapse import ncti, ncti_terms
from zootriage.core.markers.spectrum import RANKME_EPS, alpha_req, rankme


@pytest.fixture
def blobs():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 30)
    centres = rng.standard_normal((4, 12)) * 2.0
    features = centres[labels] + rng.standard_normal((120, 12)) * np.linspace(0.2, 1.5, 12)
    return features, labels


def _centred_orthonormal(n, dim, seed):
    """(n, dim) orthonormal columns orthogonal to the all-ones vector (already centred)."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(np.column_stack([np.ones(n), rng.standard_normal((n, dim))]))
    return basis[:, 1:]


def _rotation(dim, seed):
    return np.linalg.qr(np.random.default_rng(seed).standard_normal((dim, dim)))[0]


# ---------------------------------------------------------------- RankMe


def _rankme_numpy(x):
    s = np.linalg.svd(x, compute_uv=False)
    p = s / s.sum() + 1e-7
    return math.exp(-np.sum(p * np.log(p)))


def test_rankme_of_r_equal_singular_values_is_r():
    # Singular values (2, 2, 2, 0, 0): p = 1/3 + ε three times and ε twice.
    n, dim, r = 30, 5, 3
    u = np.linalg.qr(np.random.default_rng(1).standard_normal((n, r)))[0]
    x = (u * 2.0) @ _rotation(dim, 2)[:r]
    p = np.array([1 / 3 + RANKME_EPS] * 3 + [RANKME_EPS] * 2)
    assert rankme(features=x) == pytest.approx(math.exp(-np.sum(p * np.log(p))), rel=1e-12)
    assert rankme(features=x) == pytest.approx(3.0, rel=1e-5)


def test_rankme_of_isotropic_gaussian_is_the_dimension():
    x = np.random.default_rng(3).standard_normal((20000, 16))
    assert rankme(features=x) == pytest.approx(16.0, rel=2e-3)
    assert rankme(features=x) < 16.0


@pytest.mark.parametrize("shape", [(120, 12), (10, 40)])  # tall and wide
def test_rankme_matches_numpy_svd(shape):
    x = np.random.default_rng(4).standard_normal(shape) * np.linspace(0.1, 3.0, shape[1]) + 0.5
    assert rankme(features=x) == pytest.approx(_rankme_numpy(x), rel=1e-9)


def test_rankme_is_invariant_to_rotation_and_scale(blobs):
    x, _ = blobs
    assert rankme(features=7.0 * x @ _rotation(12, 5)) == pytest.approx(rankme(features=x), rel=1e-9)


def test_rankme_of_zero_features_is_undefined():
    with pytest.raises(MarkerUndefined, match="all zero"):
        rankme(features=np.zeros((10, 3)))


# ---------------------------------------------------------------- α-ReQ


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.3])
def test_alpha_req_recovers_an_exact_power_law(alpha):
    # Centred data with covariance eigenvalues exactly c·k^(−α), k = 1..30, in a rotated basis.
    n, dim = 200, 30
    lam = 4.0 * np.arange(1, dim + 1, dtype=float) ** -alpha
    x = (_centred_orthonormal(n, dim, 6) * np.sqrt(lam * (n - 1))) @ _rotation(dim, 7) + 2.0
    assert alpha_req(features=x) == pytest.approx(alpha, rel=1e-9)


def test_alpha_req_of_a_sampled_power_law_is_close():
    rng = np.random.default_rng(8)
    dim = 20
    x = rng.standard_normal((40000, dim)) * np.arange(1, dim + 1, dtype=float) ** -0.5  # λ_k = k^(−1)
    assert alpha_req(features=x) == pytest.approx(1.0, abs=0.03)


def test_alpha_req_matches_numpy_polyfit(blobs):
    x, _ = blobs
    lam = np.sort(np.linalg.eigvalsh(np.cov(x, rowvar=False)))[::-1]
    lam = lam[lam >= 1e-6 * lam[0]]
    slope, _ = np.polyfit(np.log(np.arange(1, lam.size + 1)), np.log(lam), 1)
    assert alpha_req(features=x) == pytest.approx(-slope, rel=1e-9)


def test_alpha_req_fits_only_the_eigenvalues_above_the_cutoff():
    # Three eigenvalues 1, 1/2, 1/4 and a fourth at 1e-9 of the first: the fit ignores the fourth.
    n = 50
    lam = np.array([1.0, 0.5, 0.25, 1e-9])
    x = _centred_orthonormal(n, 4, 9) * np.sqrt(lam * (n - 1))
    expected = -np.polyfit(np.log([1.0, 2.0, 3.0]), np.log(lam[:3]), 1)[0]
    assert alpha_req(features=x) == pytest.approx(expected, rel=1e-9)


def test_alpha_req_is_undefined_without_enough_spectrum():
    with pytest.raises(MarkerUndefined, match="zero variance"):
        alpha_req(features=np.full((10, 4), 0.3))
    with pytest.raises(MarkerUndefined, match="at least 3"):
        alpha_req(features=np.random.default_rng(10).standard_normal((10, 2)))


def test_spectral_markers_take_tensors():
    x = np.random.default_rng(11).standard_normal((50, 6))
    assert rankme(features=torch.from_numpy(x), device="cpu") == pytest.approx(rankme(features=x), rel=1e-12)
    assert alpha_req(features=torch.from_numpy(x), device="cpu") == pytest.approx(
        alpha_req(features=x), rel=1e-12
    )


# ---------------------------------------------------------------- NCTI-style collapse


def _ncti_numpy(x, labels):
    classes = np.unique(labels)
    means = np.stack([x[labels == c].mean(axis=0) for c in classes])
    mu_g = x.mean(axis=0)
    sw = sum((x[labels == c] - means[i]).T @ (x[labels == c] - means[i]) for i, c in enumerate(classes))
    sw = sw / x.shape[0]
    sb = sum(np.outer(m - mu_g, m - mu_g) for m in means) / classes.size
    w, v = np.linalg.eigh(sb)
    keep = w > 1e-3 * w.max()
    nc1 = np.trace(sw @ (v[:, keep] / w[keep]) @ v[:, keep].T) / classes.size
    s = np.linalg.svd(means - means.mean(axis=0), compute_uv=False)
    seli = s.sum() ** 2 / ((classes.size - 1) * np.sum(s**2))
    hits = 0
    for xi, yi in zip(x, labels, strict=True):
        hits += int(classes[np.argmin([np.linalg.norm(xi - m) for m in means])] == yi)
    return 1 / (1 + nc1), seli, hits / x.shape[0]


def test_ncti_matches_numpy_scatter_svd_and_a_loop(blobs):
    x, labels = blobs
    terms = ncti_terms(features=x, labels=labels)
    assert tuple(terms) == pytest.approx(_ncti_numpy(x, labels), rel=1e-9)
    assert ncti(features=x, labels=labels) == pytest.approx(sum(_ncti_numpy(x, labels)), rel=1e-9)
    assert 0 < terms.variability < 1 and 0 < terms.simplex < 1 and 0.5 < terms.nearest_centre <= 1


def test_ncti_of_collapsed_classes_on_a_simplex_is_three():
    # Every point at its class mean, the means the vertices of a regular simplex (e_c − 1/C).
    n_classes, dim = 5, 8
    vertices = np.eye(n_classes) - 1.0 / n_classes
    means = 3.0 * np.hstack([vertices, np.zeros((n_classes, dim - n_classes))]) @ _rotation(dim, 12) + 1.0
    labels = np.repeat(np.arange(n_classes), 4)
    terms = ncti_terms(features=means[labels], labels=labels)
    assert tuple(terms) == pytest.approx((1.0, 1.0, 1.0), rel=1e-9)


def test_ncti_of_coinciding_class_means_is_the_lowest_extreme():
    # Every class holds the same 6 points, so the class means coincide exactly.
    points = np.random.default_rng(13).standard_normal((6, 4))
    labels = np.repeat(np.arange(3), 6)
    terms = ncti_terms(features=np.tile(points, (3, 1)), labels=labels)
    assert terms == (0.0, 0.0, pytest.approx(1 / 3))


def test_ncti_simplex_term_of_means_on_a_line_is_one_over_c_minus_one():
    labels = np.repeat(np.arange(4), 3)
    means = np.outer([0.0, 1.0, 3.0, 7.0], [1.0, 2.0, -1.0])
    spread = np.tile([[0.1, 0.0, 0.0], [-0.1, 0.0, 0.0], [0.0, 0.0, 0.0]], (4, 1))  # keeps the means
    assert ncti_terms(features=means[labels] + spread, labels=labels).simplex == pytest.approx(
        1 / 3, rel=1e-9
    )


def test_ncti_is_invariant_to_similarity_maps(blobs):
    x, labels = blobs
    moved = 0.3 * x @ _rotation(12, 15) - 5.0
    assert ncti(features=moved, labels=labels) == pytest.approx(ncti(features=x, labels=labels), rel=1e-9)


def test_ncti_needs_two_classes():
    with pytest.raises(MarkerUndefined, match="2 classes"):
        ncti(features=np.ones((4, 2)), labels=np.zeros(4, dtype=np.int64))


def test_ncti_takes_tensors(blobs):
    x, labels = blobs
    out = ncti(features=torch.from_numpy(x), labels=labels, device="cpu")
    assert out == pytest.approx(ncti(features=x, labels=labels), rel=1e-12)


# ---------------------------------------------------------------- ATC


def _atc_numpy(logits, labels):
    """Cross-fitted ATC by search: per half, the source score t minimising |#(s ≥ t) − #correct|."""
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    scores = np.array([sum(q * math.log(q) for q in row if q > 0) for row in p])
    correct = p.argmax(axis=1) == labels
    seen: dict[int, int] = {}
    folds = []
    for y in labels:
        folds.append(seen.get(int(y), 0) % 2)
        seen[int(y)] = seen.get(int(y), 0) + 1
    folds = np.array(folds)
    above = 0
    for fit in (0, 1):
        s, c = scores[folds == fit], correct[folds == fit]
        candidates = [-np.inf, np.inf, *s]
        t = min(candidates, key=lambda t: abs(np.sum(s >= t) - np.sum(c)))
        above += np.sum(scores[folds != fit] >= t)
    return above / labels.size


def test_atc_matches_a_brute_force_search():
    rng = np.random.default_rng(16)
    labels = rng.integers(0, 3, 101)
    logits = rng.standard_normal((101, 3)) * 2.0 + 1.5 * np.eye(3)[labels]
    value = atc(logits=logits, labels=labels)
    assert value == pytest.approx(_atc_numpy(logits, labels), abs=1e-12)
    assert value != pytest.approx(np.mean(logits.argmax(axis=1) == labels), abs=1e-12)  # not a copy


def test_atc_of_one_hot_logits_confident_when_right_is_the_accuracy():
    labels = np.repeat(np.arange(4), 10)
    predicted = labels.copy()
    predicted[[0, 1, 12, 25, 31]] = (labels[[0, 1, 12, 25, 31]] + 1) % 4  # errors in both halves
    right = predicted == labels
    logits = np.eye(4)[predicted] * np.where(right, 8.0, 2.0)[:, None]
    assert atc(logits=logits, labels=labels) == pytest.approx(np.mean(right), abs=1e-12)


def test_atc_predicts_the_source_accuracy_on_the_source():
    rng = np.random.default_rng(17)
    labels = rng.integers(0, 5, 200)
    logits = rng.standard_normal((200, 5)) + 2.0 * np.eye(5)[labels]
    accuracy = np.mean(logits.argmax(axis=1) == labels)
    assert atc_predicted_accuracy(logits, labels, logits) == pytest.approx(accuracy, abs=1e-12)
    # A less confident target (the same predictions at a lower temperature) is predicted worse.
    assert atc_predicted_accuracy(logits, labels, logits / 4.0) < accuracy


def test_atc_threshold_extremes():
    scores = np.array([-0.5, -0.1, -0.9])
    assert atc_threshold(scores, np.ones(3, dtype=bool)) == -np.inf
    assert atc_threshold(scores, np.zeros(3, dtype=bool)) == np.inf
    assert atc_threshold(scores, np.array([True, False, True])) == -0.5  # s_(2) of (−0.9, −0.5, −0.1)
    with pytest.raises(ValueError, match="one correctness flag"):
        atc_threshold(scores, np.ones(2, dtype=bool))
    with pytest.raises(ValueError, match="same number of columns"):
        atc_predicted_accuracy(np.zeros((3, 2)), np.zeros(3, dtype=np.int64), np.zeros((3, 4)))


def test_negative_entropy_is_stable_for_large_logits():
    s = negative_entropy(np.array([[1e4, 0.0, -1e4], [0.0, 0.0, 0.0]]))
    assert s[0] == pytest.approx(0.0, abs=1e-300) and s[1] == pytest.approx(-math.log(3), rel=1e-12)


def test_atc_needs_two_points():
    with pytest.raises(MarkerUndefined, match="2 points"):
        atc(logits=np.array([[1.0, 0.0]]), labels=np.array([0]))


# ---------------------------------------------------------------- through compute_markers


def test_field_markers_carry_noise_estimates_through_compute_markers():
    rng = np.random.default_rng(18)
    labels = np.repeat(np.arange(3), 30)
    features = rng.standard_normal((90, 10)) + 2.0 * np.eye(10)[labels]
    logits = rng.standard_normal((90, 3)) + 1.5 * np.eye(3)[labels]
    names = ["rankme", "alpha_req", "ncti", "atc"]
    out = compute_markers(
        features, labels, logits, protocol=Protocol(points_per_class=10, repeats=3), names=names, device="cpu"
    )
    assert out["rankme"].value == pytest.approx(_rankme_numpy(features), rel=1e-9)
    assert out["ncti"].value == pytest.approx(sum(_ncti_numpy(features, labels)), rel=1e-9)
    assert out["atc"].value == pytest.approx(_atc_numpy(logits, labels), abs=1e-12)
    for name in names:
        assert out[name].applicable and out[name].std is not None and out[name].std > 0, name
