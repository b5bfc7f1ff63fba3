"""LogME and H-score against the formulas of their papers, checked by independent computations."""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.linear_model import BayesianRidge

from zootriage.core.markers import MarkerUndefined
from zootriage.core.markers.transferability import h_score, logme


def _direct_log_evidence(features, y, alpha, beta):
    """log N(y | 0, β⁻¹I + α⁻¹FFᵀ): the marginal likelihood of Bayesian linear regression."""
    n = features.shape[0]
    cov = np.eye(n) / beta + features @ features.T / alpha
    _, logdet = np.linalg.slogdet(cov)
    return -0.5 * (n * np.log(2 * np.pi) + logdet + y @ np.linalg.solve(cov, y))


def _brute_force_logme(features, labels, log_beta_max=15.0):
    """Maximise the direct evidence over (log α, log β) numerically, class by class."""
    total = 0.0
    for k in np.unique(labels):
        y = (labels == k).astype(float)

        def negative(theta, y=y):
            return -_direct_log_evidence(features, y, np.exp(theta[0]), np.exp(theta[1]))

        best = min(
            (
                minimize(negative, start, method="L-BFGS-B", bounds=[(-10, 40), (-10, log_beta_max)])
                for start in ([0.0, 0.0], [5.0, 2.0], [-3.0, 1.0])
            ),
            key=lambda r: r.fun,
        )
        total += -best.fun
    return total / np.unique(labels).size / features.shape[0]


def _data(n_per_class, dim, n_classes, separation, seed):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_classes), n_per_class)
    centres = rng.standard_normal((n_classes, dim)) * separation
    return centres[labels] + rng.standard_normal((labels.size, dim)), labels


@pytest.mark.parametrize(
    ("n_per_class", "dim", "separation"),
    [(20, 5, 1.0), (10, 40, 0.5), (20, 6, 0.0)],  # tall, wide (n < D), no signal (α → ∞)
)
def test_logme_is_the_maximum_of_the_direct_evidence(n_per_class, dim, separation):
    x, labels = _data(n_per_class, dim, 3, separation, seed=dim)
    assert logme(features=x, labels=labels) == pytest.approx(_brute_force_logme(x, labels), abs=1e-6)


def test_logme_of_wide_features_is_stable_to_rounding():
    # n = 30 points in 100 dimensions: U is square, so ‖y − UUᵀy‖² is exactly 0; computed as a
    # difference of sums it left a ~1e-15 residue that β multiplied, and a relative change of 1e-14
    # in the features (the size of CPU/CUDA rounding) moved LogME by 6e-8 (an H200 run failed the
    # CUDA-vs-CPU check, session 11)
    rng = np.random.default_rng(100)
    labels = np.repeat(np.arange(5), 6)
    x = np.maximum(rng.standard_normal((5, 100))[labels] + rng.standard_normal((30, 100)), 0)
    nudged = x * (1 + 1e-14 * np.random.default_rng(0).standard_normal(x.shape))
    assert logme(features=nudged, labels=labels) == pytest.approx(logme(features=x, labels=labels), rel=1e-10)
    best = _brute_force_logme(x, labels, log_beta_max=40.0)  # β ≈ e^21 here: the features fit the labels
    assert logme(features=x, labels=labels) == pytest.approx(best, abs=1e-6)


@pytest.mark.filterwarnings("error")
def test_logme_of_few_points_in_many_dimensions_never_steps_to_a_zero_beta():
    # 15 points in 36 dimensions (U square): with β ≫ α every term of γ = Σ βσ²/(α + βσ²) rounded to 1,
    # so n − γ was exactly 0, β stepped to 0 and the next evidence was log 0 = −∞ (a RuntimeWarning,
    # seen on an unseeded MNIST CNN's 20 features); n − γ is now a sum of positive terms
    x, labels = _data(3, 36, 5, 3.0, seed=2)
    best = _brute_force_logme(x, labels, log_beta_max=40.0)
    assert logme(features=x, labels=labels) == pytest.approx(best, abs=1e-6)


def test_logme_fixed_point_agrees_with_sklearn_bayesian_ridge():
    # scikit-learn's BayesianRidge runs MacKay's updates independently; with its hyperpriors off,
    # its (lambda_, alpha_) are LogME's (α, β).
    x, labels = _data(40, 8, 3, 1.0, seed=1)
    evidences = []
    for k in range(3):
        y = (labels == k).astype(float)
        br = BayesianRidge(
            fit_intercept=False, alpha_1=0, alpha_2=0, lambda_1=0, lambda_2=0, tol=1e-14, max_iter=100000
        ).fit(x, y)
        evidences.append(_direct_log_evidence(x, y, br.lambda_, br.alpha_))
    assert logme(features=x, labels=labels) == pytest.approx(np.mean(evidences) / x.shape[0], abs=1e-8)


def test_logme_prefers_separable_features():
    noisy, labels = _data(30, 10, 4, 0.1, seed=2)
    clear, _ = _data(30, 10, 4, 3.0, seed=2)
    assert logme(features=clear, labels=labels) > logme(features=noisy, labels=labels)


def test_logme_is_undefined_when_labels_are_an_exact_linear_function_of_features():
    labels = np.repeat(np.arange(3), 10)
    collapsed = np.random.default_rng(3).standard_normal((3, 8))[labels]  # rank 3 < n
    with pytest.raises(MarkerUndefined, match="unbounded"):
        logme(features=collapsed, labels=labels)


def _h_score_as_published(f, labels):
    """Bao et al.'s reference code: covariances with 1/(n−1), g = class means, pinv(rcond=1e-15)."""
    cov_f = np.cov(f, rowvar=False)
    g = np.zeros_like(f)
    for c in np.unique(labels):
        g[labels == c] = f[labels == c].mean(axis=0)
    cov_g = np.cov(g, rowvar=False)
    return np.trace(np.linalg.pinv(cov_f, rcond=1e-15) @ cov_g)


def test_h_score_matches_the_published_formula():
    x, labels = _data(25, 7, 4, 1.0, seed=4)
    assert h_score(features=x, labels=labels) == pytest.approx(_h_score_as_published(x, labels), rel=1e-9)


def test_h_score_of_one_feature_is_the_correlation_ratio():
    x, labels = _data(30, 1, 3, 1.0, seed=5)
    f = x[:, 0]
    between = sum((labels == c).sum() * (f[labels == c].mean() - f.mean()) ** 2 for c in range(3))
    assert h_score(features=x, labels=labels) == pytest.approx(
        between / np.sum((f - f.mean()) ** 2), rel=1e-10
    )


def test_h_score_of_collapsed_classes_is_classes_minus_one():
    labels = np.repeat(np.arange(5), 6)
    collapsed = np.random.default_rng(6).standard_normal((5, 9))[labels]
    assert h_score(features=collapsed, labels=labels) == pytest.approx(4.0, rel=1e-9)


def test_h_score_is_invariant_to_invertible_affine_maps():
    x, labels = _data(20, 6, 3, 1.0, seed=7)
    a = np.random.default_rng(8).standard_normal((6, 6)) + 3 * np.eye(6)
    assert h_score(features=x @ a + 4.0, labels=labels) == pytest.approx(
        h_score(features=x, labels=labels), rel=1e-8
    )


def test_h_score_of_constant_features_is_zero():
    assert h_score(features=np.full((12, 3), 0.7), labels=np.repeat([0, 1], 6)) == 0.0
