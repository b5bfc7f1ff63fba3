"""The pre-registered statistics against independent computations: exact enumeration, a known
answer, a hand-worked Holm example and hand-counted pairs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import spearmanr

from zootriage.core.backtest import stats
from zootriage.core.backtest.hypotheses import correlation
from zootriage.core.backtest.tables import RecipeRow


def _groups() -> list[np.ndarray]:
    """Two architectures, four recipes each: columns (marker, outcome)."""
    return [
        np.array([[0.1, 0.50], [0.4, 0.62], [0.3, 0.55], [0.9, 0.58]]),
        np.array([[1.0, 0.71], [2.0, 0.69], [3.0, 0.80], [4.0, 0.83]]),
    ]


def test_mean_rho_is_the_mean_of_scipy_spearman() -> None:
    groups = _groups()
    expected = np.mean([spearmanr(g[:, 0], g[:, 1]).statistic for g in groups])
    assert stats.mean_rho(groups, 0, 1) == pytest.approx(expected)


def test_permutation_p_matches_brute_force_enumeration() -> None:
    groups = _groups()
    observed = stats.mean_rho(groups, 0, 1)
    assert observed is not None
    hits = total = 0
    for p0, p1 in itertools.product(itertools.permutations(range(4)), repeat=2):
        shuffled = [np.column_stack([g[:, 0], g[list(p), 1]]) for g, p in zip(groups, (p0, p1), strict=True)]
        hits += stats.mean_rho(shuffled, 0, 1) >= observed - 1e-12  # type: ignore[operator]
        total += 1
    exact = hits / total
    assert 0 < exact < 0.5  # the case is neither trivial nor hopeless
    p = stats.permutation_p(groups, 0, 1, n_perm=20_000, seed=3)
    assert p == pytest.approx(exact, abs=0.01)


def test_permutation_p_is_smallest_possible_for_a_perfect_unique_order() -> None:
    g = np.column_stack([np.arange(6.0), np.arange(6.0)])
    p = stats.permutation_p([g, g.copy()], 0, 1, n_perm=2000, seed=0)
    assert p is not None and p < 0.01  # exact: (1/720)^2


def test_stratified_bootstrap_interval_covers_a_known_mean() -> None:
    """Statistic: the mean over groups of each group's mean; the truth is μ = 1. Percentile
    intervals from 20 points per group should cover it in about 95 % of data sets."""
    rng = np.random.default_rng(0)

    def mean_of_means(resampled: list[np.ndarray]) -> np.ndarray:
        return np.mean([g[..., 0].mean(axis=-1) for g in resampled], axis=0)

    covered = 0
    trials = 300
    for trial in range(trials):
        groups = [rng.normal(1.0, 1.0, size=(20, 1)) for _ in range(3)]
        boot = stats.stratified_bootstrap(groups, mean_of_means, n_boot=800, seed=trial)
        ci = stats.percentile_ci(boot)
        assert ci is not None
        covered += ci[0] <= 1.0 <= ci[1]
    assert 0.89 <= covered / trials <= 0.99


def test_bootstrap_resamples_within_groups_only() -> None:
    groups = [np.zeros((5, 1)), np.ones((7, 1))]

    def group_means(resampled: list[np.ndarray]) -> np.ndarray:
        assert resampled[0].shape == (50, 5, 1) and resampled[1].shape == (50, 7, 1)
        return resampled[0][..., 0].mean(axis=-1) * 10 + resampled[1][..., 0].mean(axis=-1)

    assert np.all(stats.stratified_bootstrap(groups, group_means, n_boot=50, seed=0) == 1.0)


def test_holm_matches_a_hand_worked_example() -> None:
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → max(0.06, 0.04) = 0.06
    adjusted = stats.holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005})
    assert adjusted == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06, "d": 0.02})
    assert [k for k, v in adjusted.items() if v <= 0.05] == ["a", "d"]
    assert stats.holm({"x": 0.4, "y": 0.9}) == pytest.approx({"x": 0.8, "y": 0.9})


def test_pair_counts_by_hand() -> None:
    """Columns: outcome mean, rule marker, seed SD, k. Recipes 0 and 1 differ by 0.10 with noise
    1.96·sqrt(2·0.01²/3) ≈ 0.016: eligible; recipes 1 and 2 differ by 0.01: not eligible."""
    rows = np.array([[0.70, 5.0, 0.01, 3], [0.60, 4.0, 0.01, 3], [0.61, 6.0, 0.01, 3]], dtype=np.float64)
    cols = stats.PairColumns(outcome=0, sd=2, k=3)
    correct, eligible = stats.pair_counts(rows, cols, [1])
    # eligible: (0,1) gap 0.10, (0,2) gap 0.09; picks: (0,1) picks 0 — correct; (0,2) picks 2 — wrong
    assert (int(correct), int(eligible)) == (1, 2)
    acc, n = stats.pair_accuracy([rows], cols, [1])
    assert (acc, n) == (0.5, 2)


def test_undecided_picks_are_not_correct() -> None:
    # two rule columns that disagree: the geometry rule is undecided on the only pair
    rows = np.array([[0.9, 1.0, 0.0, 0.0, 2], [0.1, 0.0, 1.0, 0.0, 2]], dtype=np.float64)
    cols = stats.PairColumns(outcome=0, sd=3, k=4)
    assert stats.pair_accuracy([rows], cols, [1, 2]) == (0.0, 1)
    assert stats.pair_accuracy([rows], cols, [1]) == (1.0, 1)


def test_delta_bootstrap_recomputes_eligible_pairs() -> None:
    rows = np.array([[0.9, 1.0, 0.0, 0.0, 2], [0.1, 0.0, 1.0, 0.0, 2], [0.5, 0.5, 0.5, 0.0, 2]])
    cols = stats.PairColumns(outcome=0, sd=3, k=4)
    deltas = stats.stratified_bootstrap([rows], stats.delta_rows(cols, [1], [2]), n_boot=400, seed=1)
    # rule [1] orders every pair right and [2] every pair wrong, so Δ* = 1 whenever a pair exists;
    # resamples holding one recipe only have no eligible pair and are dropped
    assert deltas.size < 400 and np.all(deltas == 1.0)


def test_case_bootstrap_resamples_architectures_then_seeds() -> None:
    flags = [np.array([1.0, 1.0, 1.0]), np.array([0.0])]
    boot = stats.case_bootstrap(flags, n_boot=4000, seed=0)
    # both archs drawn: 3 ones + 1 zero (0.75); arch 0 twice: 1; arch 1 twice: 0
    assert set(np.round(np.unique(boot), 6)) <= {0.0, 0.75, 1.0}
    assert np.mean(boot == 0.0) == pytest.approx(0.25, abs=0.03)
    assert np.mean(boot == 0.75) == pytest.approx(0.5, abs=0.03)


def test_correlation_leaves_out_architectures_without_a_rho() -> None:
    rows = [
        RecipeRow("cnn", f"r{i}", 3, {"dimension": float(i), "probe": 0.5 + 0.1 * i}, {"probe": 0.01})
        for i in range(4)
    ] + [
        RecipeRow("mlp2", f"r{i}", 3, {"dimension": 1.0, "probe": 0.5 + 0.1 * i}, {"probe": 0.01})
        for i in range(4)
    ]
    result = correlation(rows, "dimension", "probe", n_perm=100, n_boot=200, seed=0)
    assert result["rho_by_arch"] == {"cnn": pytest.approx(1.0), "mlp2": None}
    assert result["rho_bar"] == pytest.approx(1.0) and result["ci"] == pytest.approx((1.0, 1.0))
    assert result["p"] == pytest.approx(1 / 24, abs=0.04)
