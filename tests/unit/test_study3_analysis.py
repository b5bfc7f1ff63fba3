"""Study 3's analysis and decision on synthetic records (no model trained): a marker that orders every
recipe by its outcome wins T1/T2 at the minimum p of 12 architectures and becomes the default; with
markers unrelated to the outcome nothing qualifies and the answer says so with numbers; floor
admission, noise eligibility and the degenerate-task rule are applied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from zootriage.core.backtest.config import Study3Config, load_study3_config
from zootriage.core.backtest.freeze_rule import load_frozen_rule
from zootriage.core.backtest.study3_analysis import analyze3
from zootriage.core.backtest.study3_decision import decide3
from zootriage.core.backtest.study3_recipes import recipe_parts, study3_recipes
from zootriage.core.backtest.study3_report import render

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def config() -> Study3Config:
    cfg = load_study3_config(ROOT / "studies" / "confirmatory.toml")
    return cfg.model_copy(update={"stats": cfg.stats.model_copy(update={"n_boot": 200})})


def _records(
    config: Study3Config, marker: str, degenerate_task: str | None = None
) -> tuple[list[Any], list[Any]]:
    """3 seeds per recipe; the outcome rises with a per-architecture order of the recipes, far
    above seed noise. ``marker`` = "aligned": Ψ_eff and numerical rank follow the outcome and ID
    accuracy is reversed; "random": all three are unrelated to it."""
    rng = np.random.default_rng(5)
    parts = recipe_parts(config)
    names = [r.name for r in study3_recipes(config)]
    models, floors = [], []
    for task in ("A", "C"):
        for arch in config.archs:
            order = rng.permutation(len(names))
            for seed in range(3):
                floors.append(
                    {"task": task, "arch": arch, "seed": seed, "outcomes": {"probe20": 0.3 + 0.001 * seed}}
                )
            for rank, recipe in zip(order, names, strict=True):
                y = 0.5 + 0.03 * rank
                noise = rng.permutation(len(names))
                for seed in range(3):
                    signal = y if marker == "aligned" else 0.5 + 0.03 * noise[rank]
                    models.append(
                        {
                            "task": task, "arch": arch, "recipe": recipe, "seed": seed, "diverged": False,
                            "v2_parts": parts[recipe],
                            "id_acc": 1.5 - signal if marker == "aligned" else signal,
                            "train_acc": 1.0, "numerical_rank": 100 * signal,
                            "outcomes": {"probe20": y + 0.001 * (seed - 1), "probe": 1.5 - y + 0.001 * seed},
                            "markers": {"numerical_rank": 100 * signal, "nc1": 1.0, "logme": 0.0,
                                        "alpha_req": 2.0 - signal},
                            "geometry": {"none": {"markers": {"utilization": signal, "dimension": 10 * signal,
                                                              "radius": 1.0},
                                                  "regime": {"degenerate": task == degenerate_task}}},
                        }
                    )  # fmt: skip
    return models, floors


def test_an_aligned_marker_wins_at_the_minimum_p_and_becomes_the_default(config: Study3Config) -> None:
    models, floors = _records(config, "aligned")
    result = analyze3(models, floors, config, load_frozen_rule(ROOT / "docs/study/plan3_frozen_rule.json"))
    assert len(result["pairs"]) == 2 * 12 * 36  # every recipe admitted, every pair beyond the noise
    assert all(a["admitted"] for a in result["admission"])
    for name in ("T1", "T2"):
        t = result["tests"][name]
        assert t["n_archs"] == 12 and t["d"] == dict.fromkeys(config.archs, 1.0)
        assert t["p"] == pytest.approx(1 / 4096) and t["significant"]
        assert t["p_holm"] == pytest.approx(3 / 4096)
    assert sum(p["decoupled"] for p in result["pairs"]) == 2 * 12 * 33
    psi = result["accuracy"]["psi_eff"]
    assert psi["pooled"]["accuracy"] == 1.0 and psi["pooled"]["undecided"] == 0
    assert result["accuracy"]["id_accuracy"]["pooled"]["accuracy"] == 0.0
    assert (
        result["accuracy"]["r_eff"]["pooled"]["undecided"] == result["accuracy"]["r_eff"]["pooled"]["pairs"]
    )
    assert result["accuracy"]["always_v2"]["pooled"]["pairs"] == 2 * 12
    assert result["accuracy"]["alpha_req"]["pooled"]["accuracy"] == 1.0  # α closer to 1 goes with the outcome
    assert result["accuracy"]["rankme"]["pooled"]["undecided"] == len(result["pairs"])  # absent: undecided
    assert result["frozen_rule"] is not None and len(result["frozen_rule"]["bins"]) == 5
    assert result["spearman"]["A"]["psi_eff"]["rho_bar"] == pytest.approx(1.0)
    assert result["spearman"]["C"]["id_accuracy"]["rho_bar"] == pytest.approx(-1.0)
    assert result["families"]["psi_eff"]["vit"]["pairs"] == 2 * 3 * 36
    assert result["tied_pairs"]["more_v2_parts"]["undecided"] == 2 * 12 * 3  # ties by definition
    effects = result["factor_effects"]["A"]
    assert effects is not None and effects["df_residual"] == 12 * 8 - 12 - 3
    assert set(effects) == {"df_residual", "aug", "ls", "ema_long"}
    v1v2 = result["v1v2"]
    assert len(v1v2["cases"]) == 2 * 12 * 3 and v1v2["test"]["n_archs"] == 12
    assert all(c["psi_eff"] == "correct" and c["id_accuracy"] == "wrong" for c in v1v2["cases"])
    assert result["exclusions"] == {}
    decision = decide3(result, ["A", "C"])
    # Both are perfect; Ψ_eff must also beat numerical rank by 0.05 (condition c), so it does not qualify.
    psi_check, rank_check = decision["checks"]["psi_eff"], decision["checks"]["numerical_rank"]
    assert psi_check["a_holm"] and psi_check["b"] and psi_check["c_margins"]["numerical_rank"] == 0.0
    assert not psi_check["qualifies"] and rank_check["qualifies"]
    assert rank_check["b_vs_id_per_task"] == {"A": 1.0, "C": 1.0}
    assert decision["default"] == "numerical_rank" and decision["confidence"] in (
        "win_rate",
        "frozen_rule_probability",
    )


def test_unrelated_markers_mean_nothing_predicts(config: Study3Config) -> None:
    models, floors = _records(config, "random")
    result = analyze3(models, floors, config, None)
    assert result["frozen_rule"] is None
    decision = decide3(result, ["A", "C"])
    assert decision["nothing_predicts"] and decision["default"] == "id_accuracy"
    assert decision["rankings"]["win_rate"]["pairs"] == len(result["pairs"])
    assert "answer" in decision["v1v2"]


def test_floor_admission_and_degenerate_task(config: Study3Config) -> None:
    models, floors = _records(config, "aligned", degenerate_task="C")
    for f in floors:
        f["outcomes"]["probe20"] = 0.99 + 0.001 * f["seed"]  # no recipe beats this floor
    result = analyze3(models, floors, config, None)
    assert result["exclusions"]["C/mlp-bn/v1"] == {"diverged": 0, "degenerate": 3}
    assert result["tasks_without_pairs"] == ["C"] and result["degenerate_fraction"]["C"] == 1.0
    assert not result["pairs"] and not any(a["admitted"] for a in result["admission"])
    assert not result["tests"]["T1"]["assessable"] and result["tests"]["T1"]["p_for_holm"] == 1.0


def test_a_secondary_outcome_is_analysed_the_same_way(config: Study3Config) -> None:
    models, floors = _records(config, "aligned")
    for f in floors:
        f["outcomes"]["probe"] = 0.0 + 0.001 * f["seed"]
    result = analyze3(models, floors, config, None, outcome="probe")  # the full probe runs against Ψ_eff
    assert result["outcome"] == "probe" and result["centering"] == "none"
    assert result["accuracy"]["psi_eff"]["pooled"]["accuracy"] == 0.0
    assert result["accuracy"]["id_accuracy"]["pooled"]["accuracy"] == 1.0
    assert result["tests"]["T1"]["mean"] == -1.0


def test_the_report_states_each_primary_test(config: Study3Config) -> None:
    models, floors = _records(config, "aligned")
    analysis = analyze3(models, floors, config, load_frozen_rule(ROOT / "docs/study/plan3_frozen_rule.json"))
    text = render(
        {"plan_commit": "abc123", "analysis": analysis, "decision": decide3(analysis, ["A", "C"])}, "t"
    )
    t1 = next(line for line in text.splitlines() if line.startswith("| T1 |"))
    assert "psi_eff vs id_accuracy" in t1 and "0.00024" in t1 and "| significant |" in t1
    d_line = next(line for line in text.splitlines() if line.startswith("- T1: "))
    assert d_line.count("+1.000") == 12 and "vit-p4-d48-l2 +1.000" in d_line
    assert "registration commit `abc123`" in text
    assert "calibrated:" in text and '"default": "numerical_rank"' in text
