"""The first study's method (``core.backtest.first_method``) and its correlations (``core.backtest.stats``)
against scipy on known inputs, and the pairwise rules on hand-made zoos."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from zootriage.core.backtest.first_method import Record, backtest, pairwise_both_higher, pairwise_higher
from zootriage.core.backtest.stats import correlate, pearson, spearman


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pearson_and_spearman_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(40)
    y = 0.5 * x + rng.standard_normal(40)
    y[:5] = y[5]  # ties exercise the average ranks
    assert pearson(x, y) == pytest.approx(sps.pearsonr(x, y).statistic, abs=1e-12)
    assert spearman(x, y) == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)


def test_undefined_coefficients_are_none() -> None:
    assert pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None
    assert spearman([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) is None
    assert pearson([1.0], [2.0]) is None
    assert correlate([1.0, 2.0], [2.0, 1.0]).pearson is None  # fewer than three models


def test_bootstrap_interval_is_the_percentile_of_resampled_coefficients() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(25)
    y = x + rng.standard_normal(25)
    got = correlate(x, y, n_boot=500, seed=7)
    idx = np.random.default_rng(7).integers(25, size=(500, 25))
    rs = [sps.pearsonr(x[i], y[i]).statistic for i in idx]
    rhos = [sps.spearmanr(x[i], y[i]).statistic for i in idx]
    assert got.pearson_ci == pytest.approx(tuple(np.percentile(rs, [2.5, 97.5])), abs=1e-10)
    assert got.spearman_ci == pytest.approx(tuple(np.nanpercentile(rhos, [2.5, 97.5])), abs=1e-10)
    assert got.pearson_ci[0] < got.pearson < got.pearson_ci[1]


def test_correlate_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="equal length"):
        correlate([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        correlate([1.0, float("nan"), 3.0], [1.0, 2.0, 3.0])


def _zoo() -> list[Record]:
    # Architecture "a": outcomes 0.9 > 0.8 > 0.7. Architecture "b" has one model: it forms no pair.
    return [
        Record("a1", "a", 0.9, {"dimension": 3.0, "utilization": 0.3, "id_accuracy": 0.90}),
        Record("a2", "a", 0.8, {"dimension": 2.0, "utilization": 0.4, "id_accuracy": 0.95}),
        Record("a3", "a", 0.7, {"dimension": 1.0, "utilization": 0.1, "id_accuracy": 0.95}),
        Record("b1", "b", 0.1, {"dimension": 9.0, "utilization": 0.9, "id_accuracy": 0.99}),
    ]


def test_pairwise_rates_count_wins_losses_and_abstentions() -> None:
    zoo = _zoo()
    dim = pairwise_higher(zoo, "dimension")
    assert (dim.pairs, dim.wins, dim.losses, dim.undecided) == (3, 1.0, 0.0, 0.0)
    acc = pairwise_higher(zoo, "id_accuracy")  # a1<a2 lose, a1<a3 lose, a2=a3 tie
    assert (acc.wins, acc.losses, acc.undecided) == pytest.approx((0.0, 2 / 3, 1 / 3))
    rule = pairwise_both_higher(zoo, "dimension", "utilization")  # (a1,a2) disagree; others win
    assert (rule.wins, rule.losses, rule.undecided) == pytest.approx((2 / 3, 0.0, 1 / 3))


def test_backtest_reports_every_marker_pooled_and_per_architecture() -> None:
    result = backtest(_zoo(), n_boot=200)
    assert set(result.markers) == {"dimension", "id_accuracy", "utilization"}
    assert result.architectures == {"a": 3, "b": 1}
    per_a = result.markers["dimension"].by_architecture["a"]
    assert per_a.pearson == pytest.approx(1.0)
    assert result.markers["dimension"].by_architecture["b"].pearson is None
    assert result.geometry_rule is not None and result.geometry_rule.pairs == 3


def test_backtest_skips_missing_values_and_validates() -> None:
    zoo = [*_zoo(), Record("a4", "a", 0.5, {"dimension": None})]
    assert backtest(zoo, ["dimension"], n_boot=100).markers["dimension"].pooled.n == 4
    with pytest.raises(ValueError, match="at least 3"):
        backtest(_zoo()[:2])
    with pytest.raises(ValueError, match="twice"):
        backtest([*_zoo(), _zoo()[0]])
    with pytest.raises(ValueError, match="not finite"):
        backtest([*_zoo(), Record("x", "a", 0.2, {"dimension": float("inf")})])


def test_extreme_magnitudes_neither_overflow_nor_lose_the_sign() -> None:
    x = [1e308, -1e308, 5e-324, 0.0]
    y = [-1e308, 1e308, 0.0, 1e-300]
    assert pearson(x, y) == pytest.approx(sps.pearsonr(np.array(x) / 1e300, np.array(y) / 1e300).statistic)
    assert correlate(x, y, n_boot=50).pearson_ci is not None


def test_pairs_are_every_same_architecture_pair_with_different_outcomes() -> None:
    """Formed within each architecture, they are exactly the brute-force pairs over all models."""
    import itertools

    from zootriage.core.backtest.first_method import _pairs

    rng = np.random.default_rng(5)
    zoo = [Record(f"m{i}", "abc"[i % 3], float(rng.integers(0, 4)), {}) for i in range(30)]
    brute = {
        (a.model, b.model) if a.outcome > b.outcome else (b.model, a.model)
        for a, b in itertools.combinations(zoo, 2)
        if a.architecture == b.architecture and a.outcome != b.outcome
    }
    assert {(good.model, bad.model) for good, bad in _pairs(zoo)} == brute and brute


def test_a_back_test_over_its_bounds_is_refused_before_any_work() -> None:
    """5,000 models of one architecture are 12.5 M pairs for each marker (an audit's request took
    389 s of CPU in the API): refused at once, as n_boot draws over too many models are."""
    big = [Record(f"m{i}", "a", float(i % 7), {"dimension": float(i)}) for i in range(5000)]
    with pytest.raises(ValueError, match="same-architecture model pairs"):
        backtest(big, n_boot=100)
    spread = [Record(f"m{i}", f"a{i}", float(i % 7), {"dimension": float(i)}) for i in range(5000)]
    with pytest.raises(ValueError, match="n_boot 2000 × 5000 models"):
        backtest(spread, n_boot=2000)
