"""The frozen pairwise rule of PLAN-3 (core/backtest/freeze_rule.py), on synthetic study records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from zootriage.core.backtest import freeze_rule
from zootriage.core.backtest.freeze_rule import eligible_pairs, fit, freeze, standardise, win_probability


def _record(task: str, arch: str, recipe: int, seed: int, rank: float, probe: float) -> dict[str, Any]:
    geometry = {
        "markers": {"utilization": 0.1 + 0.01 * recipe, "dimension": 1.0},
        "regime": {"degenerate": False},
    }
    return {
        "task": task,
        "arch": arch,
        "recipe": f"r{recipe}",
        "seed": seed,
        "arm": "zoo",
        "diverged": False,
        "id_acc": 0.9,
        "markers": {"numerical_rank": rank},
        "geometry": {"none": geometry, "global": geometry},
        "outcomes": {"probe": probe},
    }


def _results(sign: float) -> dict[str, Any]:
    """Two tasks × two architectures × five recipes × three seeds; the probe outcome rises (sign = +1)
    or falls (−1) with the numerical rank, seed noise far below the recipe gaps."""
    rng = np.random.default_rng(0)
    models = [
        _record(
            task,
            arch,
            r,
            s,
            rank=50.0 * (r + 1) + s,
            probe=0.5 + sign * 0.1 * r + 0.001 * rng.standard_normal(),
        )
        for task in ("A", "B")
        for arch in ("x", "y")
        for r in range(5)
        for s in range(3)
    ]
    return {"models": models}


def test_standardise_gives_z_scores_and_zero_for_a_constant_column() -> None:
    z = standardise(np.array([[1.0, 5.0], [3.0, 5.0]]))
    np.testing.assert_allclose(z, [[-1.0, 0.0], [1.0, 0.0]])


def test_the_fitted_rule_follows_the_marker_that_predicts_and_its_sign() -> None:
    up = freeze(_results(+1.0), "synthetic", "0")
    down = freeze(_results(-1.0), "synthetic", "0")
    # 2 tasks × 2 architectures × C(5, 2) = 40 pairs, all beyond the seed noise
    assert up["in_sample"]["all"]["pairs"] == 40
    assert up["coefficients"]["log_numerical_rank"] > 0.5
    assert down["coefficients"]["log_numerical_rank"] < -0.5
    assert up["in_sample"]["all"]["accuracy"] == 1.0
    assert up["coefficients"]["id_accuracy"] == 0.0  # constant within every group


def test_pairs_within_seed_noise_are_not_eligible() -> None:
    results = _results(+1.0)
    for m in results["models"]:
        if m["recipe"] in ("r0", "r1"):
            m["outcomes"]["probe"] = 0.55 + 0.05 * (m["seed"] - 1)  # one mean, large seed spread
    pairs = eligible_pairs([m for m in results["models"] if m["task"] == "A"], "A")
    assert pairs.diffs.shape == (2 * 9, 4)  # the r0–r1 pair drops out of each architecture's ten


def test_win_probability_is_antisymmetric() -> None:
    beta = fit(np.array([[1.0, 0.0], [0.5, 1.0], [-1.0, 0.2]]), np.array([True, True, False]))
    za, zb = np.array([0.3, -1.2]), np.array([-0.4, 0.7])
    assert float(win_probability(beta, za, zb)) == pytest.approx(1 - float(win_probability(beta, zb, za)))


def test_fit_refuses_no_pairs_and_a_non_positive_ridge() -> None:
    with pytest.raises(ValueError, match="no eligible pairs"):
        fit(np.zeros((0, 2)), np.zeros(0, dtype=bool))
    with pytest.raises(ValueError, match="ridge"):
        fit(np.ones((1, 2)), np.ones(1, dtype=bool), ridge=0.0)


def test_cli_writes_the_rule_and_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "results.json"
    source.write_text(json.dumps(_results(+1.0)))
    out = tmp_path / "rule.json"
    assert freeze_rule.main([str(source), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["coefficients"]["log_numerical_rank"] > 0.5
    assert len(written["fitted_on"]["sha256"]) == 64
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert freeze_rule.main([str(bad)]) == 2
    assert freeze_rule.main([str(tmp_path / "missing.json")]) == 2
    assert "cannot freeze the rule" in capsys.readouterr().err
