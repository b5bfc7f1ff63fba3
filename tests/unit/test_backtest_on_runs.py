"""``core.backtest.on_runs``: a user's runs analysed by the pre-registered study's method — recipes of
seeds, ρ̄ with its interval and permutation p, pairwise accuracy over noise-eligible recipe pairs and Δ
against the ID-accuracy rule — checked against the study's own functions and by hand."""

from __future__ import annotations

import numpy as np
import pytest

from zootriage.core.backtest import on_runs
from zootriage.core.backtest.hypotheses import correlation, pairwise
from zootriage.core.backtest.on_runs import OUTCOME, RunOutcome, analyse, recipe_table


def zoo() -> list[RunOutcome]:
    """Two architectures × 4 recipes × 3 seeds: outcome and dimension rise with the recipe; nc1
    (lower is better) falls with it; ID accuracy falls with it; recipes 1 and 2 of architecture b have
    outcomes within their seed noise of each other."""
    rng = np.random.default_rng(1)
    runs = []
    for arch in ("a", "b"):
        for recipe, level in enumerate((0.5, 0.6, 0.7, 0.8) if arch == "a" else (0.5, 0.6, 0.601, 0.8)):
            for seed in range(3):
                values = {
                    "dimension": recipe + float(rng.normal(0, 0.01)),
                    "utilization": 0.1 * recipe,
                    "nc1": 1.0 - 0.1 * recipe,
                    "id_accuracy": 0.9 - 0.01 * recipe,
                }
                outcome = level + float(rng.normal(0, 0.01))
                runs.append(RunOutcome(f"{arch}{recipe}{seed}", arch, f"r{recipe}", outcome, values))
    return runs


def lower_is_better_nc1(monkeypatch: pytest.MonkeyPatch) -> None:
    """No registered marker prefers lower values today; pretend nc1 does."""
    real = on_runs._direction
    monkeypatch.setattr(on_runs, "_direction", lambda name: False if name == "nc1" else real(name))


def test_recipes_are_seed_means_and_single_seed_or_unlabelled_runs_are_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lower_is_better_nc1(monkeypatch)
    runs = [
        *zoo(),
        RunOutcome("x", "a", None, 0.1, {"dimension": 9.0}),
        RunOutcome("y", "a", "lone", 0.1, {}),
    ]
    rows = recipe_table(runs, ["dimension", "nc1"], oriented=True)
    assert len(rows) == 8 and {r.k for r in rows} == {3}
    first = [r for r in runs if r.architecture == "a" and r.recipe == "r0"]
    row = next(r for r in rows if r.arch == "a" and r.recipe == "r0")
    assert row.means[OUTCOME] == pytest.approx(np.mean([r.outcome for r in first]))
    assert row.sds[OUTCOME] == pytest.approx(np.std([r.outcome for r in first], ddof=1))
    assert row.means["nc1"] == pytest.approx(-1.0)  # lower is better: negated for its rule
    result = analyse(runs, ["dimension"], n_boot=200, n_perm=0, seed=0)
    assert result["recipes"] == 8
    assert any("1 run(s) have no recipe label" in n for n in result["notes"])
    assert any("1 recipe(s) have fewer than 2 runs" in n for n in result["notes"])


def test_the_answer_is_the_study_functions_on_the_recipe_rows() -> None:
    runs = zoo()
    result = analyse(runs, ["dimension", "utilization", "nc1"], n_boot=300, n_perm=500, seed=3)
    names = ["dimension", "id_accuracy", "nc1", "utilization"]
    raw, oriented = recipe_table(runs, names, False), recipe_table(runs, names, True)
    direct = correlation(raw, "dimension", OUTCOME, n_perm=500, n_boot=300, seed=3)
    got = result["rules"]["dimension"]["correlation"]
    assert got["rho_bar"] == direct["rho_bar"] and got["p"] == direct["p"]
    assert got["rho_bar_ci"] == list(direct["ci"])
    assert got["p_mc_error"] == pytest.approx(np.sqrt(direct["p"] * (1 - direct["p"]) / 500))
    pair = pairwise(oriented, ("dimension", "utilization"), OUTCOME, n_boot=300, seed=3)
    geometry = result["rules"]["geometry"]["pairwise"]
    assert geometry["accuracy"] == pair["accuracy"] and geometry["delta"] == pair["delta"]
    assert geometry["eligible_pairs"] == pair["eligible_pairs"]


def test_pairs_within_the_seed_noise_are_not_eligible_and_directions_are_kept() -> None:
    result = analyse(zoo(), ["dimension", "nc1"], n_boot=200, n_perm=0, seed=0)
    dimension = result["rules"]["dimension"]["pairwise"]
    # 6 pairs per architecture, less b's r1–r2 pair whose outcome gap is inside the seed noise.
    assert dimension["eligible_pairs"] == 11
    assert dimension["accuracy"] == 1.0  # dimension rises with the outcome on every eligible pair
    assert dimension["id_accuracy_accuracy"] == 0.0  # ID accuracy falls with it
    assert dimension["delta"] == 1.0 and dimension["delta_ci"] == [1.0, 1.0]
    lo, hi = dimension["accuracy_ci"]
    assert lo < 1.0 and hi == pytest.approx(1.0)
    nc1 = result["rules"]["nc1"]
    assert nc1["higher_is_better"] is None and nc1["pairwise"] is None  # no direction: no rule
    assert nc1["correlation"]["rho_bar"] < -0.8  # falls with the outcome (b's r1, r2 are a near tie)


def test_a_lower_is_better_marker_picks_its_lower_value(monkeypatch: pytest.MonkeyPatch) -> None:
    lower_is_better_nc1(monkeypatch)
    nc1 = analyse(zoo(), ["nc1"], n_boot=200, n_perm=0, seed=0)["rules"]["nc1"]
    assert nc1["higher_is_better"] is False and nc1["pairwise"]["accuracy"] == 1.0
    assert nc1["correlation"]["rho_bar"] < -0.8  # ρ̄ on the raw values


def test_without_id_accuracy_there_is_no_delta() -> None:
    runs = [
        RunOutcome(r.run, r.architecture, r.recipe, r.outcome, {"dimension": r.values["dimension"]})
        for r in zoo()
    ]
    result = analyse(runs, ["dimension"], n_boot=200, n_perm=0, seed=0)
    found = result["rules"]["dimension"]["pairwise"]
    assert found["accuracy"] == 1.0 and found["delta"] is None and found["id_accuracy_accuracy"] is None
    assert any("no Δ" in n for n in result["notes"])


def test_requests_that_would_allocate_too_much_are_refused_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(on_runs, "MAX_BOOT_PAIR_CELLS", 100)
    with pytest.raises(ValueError, match="lower n_boot"):
        analyse(zoo(), ["dimension"], n_boot=200, n_perm=0, seed=0)
    monkeypatch.setattr(on_runs, "MAX_BOOT_PAIR_CELLS", 10**9)
    monkeypatch.setattr(on_runs, "MAX_PERM_CELLS", 10)
    with pytest.raises(ValueError, match="lower n_perm"):
        analyse(zoo(), ["dimension"], n_boot=200, n_perm=100, seed=0)
