"""Study 3's statistics against brute force: picks with undecided apart, d_a and the exact sign flip,
Holm's decisions, the Welch admission, the cluster bootstrap, calibration, and the frozen rule."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ttest_ind

from zootriage.core.backtest.freeze_rule import FEATURES, group_probabilities, load_frozen_rule, standardise
from zootriage.core.backtest.stats import (
    Tally,
    admitted,
    calibration,
    cluster_bootstrap,
    differences,
    holm_decisions,
    main_effects,
    pick,
    primary_test,
)

ROOT = Path(__file__).resolve().parents[2]
FROZEN = ROOT / "docs" / "study" / "plan3_frozen_rule.json"


def test_pick_reports_ties_as_undecided() -> None:
    assert pick(2.0, 1.0, 0.9, 0.8) == "correct"
    assert pick(1.0, 2.0, 0.9, 0.8) == "wrong"
    assert pick(1.0, 1.0, 0.9, 0.8) == "undecided"
    assert pick(None, 1.0, 0.9, 0.8) == "undecided"
    t = Tally().add("correct").add("undecided").add("wrong").add("correct")
    assert (t.correct, t.wrong, t.undecided, t.pairs, t.accuracy()) == (2, 1, 1, 4, 0.5)


def _brute_p(d: list[float]) -> float:
    observed = np.mean(d)
    hits = sum(
        np.mean([s * x for s, x in zip(signs, d, strict=True)]) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=len(d))
    )
    return hits / 2 ** len(d)


def test_sign_flip_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    for n in (6, 8, 12):
        d = rng.normal(0.05, 0.1, n).round(3).tolist()
        test = primary_test(dict(zip([f"a{i}" for i in range(n)], d, strict=True)), min_archs=6)
        assert test["assessable"] and test["p"] == pytest.approx(_brute_p(d))
        assert test["min_p"] == 2.0**-n and test["p_for_holm"] == test["p"]
    all_positive = primary_test({f"a{i}": 0.1 for i in range(12)}, 6)
    assert all_positive["p"] == pytest.approx(1 / 4096)


def test_fewer_than_min_archs_is_not_assessable() -> None:
    test = primary_test({"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5, "e": 0.5}, min_archs=6)
    assert not test["assessable"] and test["p"] is None and test["p_for_holm"] == 1.0
    assert test["min_p"] == 1 / 32


def test_d_per_architecture() -> None:
    rule = {"x": Tally(3, 1, 0), "y": Tally(1, 1, 2), "z": Tally()}
    base = {"x": Tally(2, 2, 0), "y": Tally(3, 1, 0), "z": Tally()}
    assert differences(rule, base) == {"x": 0.25, "y": -0.5}
    with pytest.raises(ValueError, match="different pairs"):
        differences({"x": Tally(1, 0, 0)}, {"x": Tally(1, 1, 0)})


def _brute_holm(p: dict[str, float], alpha: float) -> dict[str, bool]:
    """Holm by its definition: reject in order of p while p_(i) ≤ α / (m − i)."""
    order = sorted(p, key=lambda name: p[name])
    out, going = {}, True
    for i, name in enumerate(order):
        going = going and p[name] <= alpha / (len(p) - i)
        out[name] = going
    return out


def test_holm_decisions_match_brute_force() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        p = dict(
            zip(
                ("T1", "T2", "T3"),
                rng.choice([0.001, 0.01, 0.017, 0.02, 0.03, 0.04, 0.06, 1.0], 3),
                strict=True,
            )
        )
        got = holm_decisions({k: {"p_for_holm": v} for k, v in p.items()}, 0.05)
        assert {k: v["significant"] for k, v in got.items()} == _brute_holm(p, 0.05)
    fixed = holm_decisions(
        {"T1": {"p_for_holm": 0.01}, "T2": {"p_for_holm": 0.02}, "T3": {"p_for_holm": 0.5}}, 0.05
    )
    assert fixed["T1"]["p_holm"] == pytest.approx(0.03) and fixed["T2"]["p_holm"] == pytest.approx(0.04)
    assert fixed["T3"]["p_holm"] == pytest.approx(0.5) and not fixed["T3"]["significant"]


def test_admission_welch_and_zero_variance() -> None:
    recipe, floor = [0.70, 0.72, 0.71], [0.60, 0.61, 0.62]
    got = admitted(recipe, floor, 0.01, 0.05)
    want = ttest_ind(recipe, floor, equal_var=False, alternative="greater").pvalue
    assert got["admitted"] and got["p"] == pytest.approx(want) and got["gain"] == pytest.approx(0.1)
    assert not admitted([0.615, 0.605, 0.62], floor, 0.01, 0.05)["admitted"]  # below the 0.01 gain
    assert admitted([0.5, 0.5], [0.4, 0.4, 0.4], 0.01, 0.05) == {
        "gain": pytest.approx(0.1),
        "p": None,
        "admitted": True,
    }
    assert not admitted([0.5, 0.5], [0.495, 0.495], 0.01, 0.05)["admitted"]


def test_cluster_bootstrap_resamples_architectures() -> None:
    same = cluster_bootstrap({"a": (3, 4), "b": (6, 8)}, 500)
    assert same == pytest.approx((0.75, 0.75))
    spread = cluster_bootstrap({"a": (4, 4), "b": (0, 4), "c": (2, 4)}, 2000)
    assert spread is not None
    lo, hi = spread
    assert 0 <= lo < 0.5 < hi <= 1
    assert cluster_bootstrap({"a": (0, 0)}, 10) is None


def test_calibration_brier_ece_and_bins() -> None:
    p = np.array([0.55, 0.55, 0.95, 0.95, 1.0])
    won = np.array([1, 0, 1, 1, 0])
    cal = calibration(p, won)
    assert cal["brier"] == pytest.approx(np.mean((p - won) ** 2))
    assert cal["bins"][0]["n"] == 2 and cal["bins"][4]["n"] == 3  # 1.0 falls in the last, closed bin
    want = 2 / 5 * abs(0.55 - 0.5) + 3 / 5 * abs(np.mean([0.95, 0.95, 1.0]) - 2 / 3)
    assert cal["ece"] == pytest.approx(want)
    with pytest.raises(ValueError, match=r"\[0.5, 1\]"):
        calibration(np.array([0.4]), np.array([1]))


def test_frozen_rule_is_loaded_unchanged_and_applied() -> None:
    rule = load_frozen_rule(FROZEN)
    assert rule["coefficients"] == json.loads(FROZEN.read_text())["coefficients"]
    assert rule["coefficients"]["log_numerical_rank"] == pytest.approx(1.4968, abs=1e-4)
    features = np.array(
        [[0.2, 30.0, np.log(100.0), 0.9], [0.3, 20.0, np.log(80.0), 0.8], [0.1, 25.0, np.log(90.0), 0.85]]
    )
    probs = group_probabilities(rule, features)
    beta = np.array([rule["coefficients"][n] for n, _, _ in FEATURES])
    z = standardise(features)
    assert probs[0, 1] == pytest.approx(1 / (1 + np.exp(-(z[0] - z[1]) @ beta)))
    assert np.allclose(probs + probs.T, 1.0)


def test_an_edited_frozen_rule_is_refused(tmp_path: Path) -> None:
    edited = json.loads(FROZEN.read_text())
    edited["coefficients"]["utilization"] = 0.0
    path = tmp_path / "rule.json"
    path.write_text(json.dumps(edited, indent=1) + "\n")
    with pytest.raises(ValueError, match="not the registered frozen rule"):
        load_frozen_rule(path)


def test_main_effects_match_the_balanced_design_formulas() -> None:
    rng = np.random.default_rng(11)
    cells = np.array(list(itertools.product((0, 1), repeat=3)), dtype=np.float64)
    blocks = [a for a in ("r1", "r2", "r3", "r4") for _ in range(8)]
    design = np.tile(cells, (4, 1))
    y = np.repeat([0.1, 0.2, 0.3, 0.4], 8) + design @ np.array([0.05, 0.0, -0.02]) + rng.normal(0, 0.01, 32)
    got = main_effects(y, blocks, design, ["aug", "ls", "ema_long"])
    assert got["df_residual"] == 32 - 4 - 3
    block_means = np.repeat([y[i * 8 : (i + 1) * 8].mean() for i in range(4)], 8)
    resid_full = y - block_means
    for k, name in enumerate(("aug", "ls", "ema_long")):
        on, off = y[design[:, k] == 1].mean(), y[design[:, k] == 0].mean()
        assert got[name]["effect"] == pytest.approx(on - off)
    # F of each factor by hand: ΔSS = N β² / 4 in a balanced 0/1 design; SS_res from the full fit.
    betas = np.array([got[n]["effect"] for n in ("aug", "ls", "ema_long")])
    ss_res = float(np.sum((resid_full - (design - 0.5) @ betas) ** 2))
    for k, name in enumerate(("aug", "ls", "ema_long")):
        want = (32 * betas[k] ** 2 / 4) / (ss_res / 25)
        assert got[name]["F"] == pytest.approx(want)
    assert got["aug"]["p"] < 1e-6 and got["ls"]["p"] > 0.01
