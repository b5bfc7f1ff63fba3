"""The product's default follows PLAN-3.md's rule mechanically: ``core.defaults`` computes it from a
version-3 evidence file's ``rule_inputs`` (synthetic files here), and study 3's decision is the same
function applied to the analysis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from zootriage.app.services.triage import triage_rule
from zootriage.core import defaults
from zootriage.core.protocol import Protocol

TASKS = ["A", "C"]


def _rate(correct: int, pairs: int, lo: float = 0.4, hi: float = 0.6) -> dict[str, Any]:
    return {"correct": correct, "wrong": pairs - correct, "undecided": 0, "pairs": pairs,
            "accuracy": correct / pairs, "ci95": [lo, hi]}  # fmt: skip


def _evidence(
    *, t1: bool, t2: bool = False, psi: tuple[int, int] = (80, 75), always_v2_lo: float = 0.4
) -> dict[str, Any]:
    """Task A / C pairs: 100 eligible pairs each. ID accuracy is right in 60 of each; Ψ_eff in ``psi``;
    on every baseline's own pair set Ψ_eff beats the baseline by far more than 0.05."""
    per_task = {"psi_eff": psi, "id_accuracy": (60, 60), "numerical_rank": (65, 65)}
    tallies: dict[str, dict[str, dict[str, list[int]]]] = {}
    for rule, (a, c) in per_task.items():
        tallies[rule] = {"all": {"A": [a, 100], "C": [c, 100], "pooled": [a + c, 200]}}
    own = {
        "more_v2_parts": ("decoupled", 30),
        "always_v2": ("v1v2", 12),
        "longer_schedule": ("longer_decides", 20),
    }
    for rule, (pair_set, correct) in own.items():
        tallies[rule] = {pair_set: {"pooled": [correct, 60]}}
        tallies["psi_eff"][pair_set] = {"pooled": [55, 60]}
        tallies["numerical_rank"][pair_set] = {"pooled": [40, 60]}
    rules = {
        "psi_eff": {"A": _rate(psi[0], 100), "C": _rate(psi[1], 100), "pooled": _rate(sum(psi), 200)},
        "id_accuracy": {"A": _rate(60, 100), "C": _rate(60, 100), "pooled": _rate(120, 200, 0.55, 0.65)},
        "always_v2": {
            "A": _rate(20, 24, always_v2_lo, 0.9),
            "C": _rate(19, 24, always_v2_lo, 0.9),
            "pooled": _rate(39, 48, always_v2_lo, 0.9),
        },
    }
    inputs = {
        "tasks": TASKS,
        "significant": {"T1": t1, "T2": t2},
        "frozen_calibrated": False,
        "tallies": tallies,
    }
    return {"version": 3, "plan_commit": "abc1234", "outcome": "probe20", "centering": "none",
            "rules": rules, "rule_inputs": inputs}  # fmt: skip


@pytest.fixture
def use_evidence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def use(doc: dict[str, Any]) -> defaults.ProductDefault:
        path = tmp_path / f"evidence-{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps(doc))
        monkeypatch.setattr(defaults, "EVIDENCE_PATH", path)
        return defaults.product_default()

    return use


def test_a_qualifying_marker_becomes_the_default(use_evidence) -> None:
    chosen = use_evidence(_evidence(t1=True))
    assert (chosen.rule, chosen.v1_v2_rule, chosen.centering) == ("utilization", "utilization", "none")
    assert "psi_eff qualifies" in chosen.reason and "155 of 200 pairs, 0.78" in chosen.reason
    assert triage_rule(None).name == "utilization" and triage_rule(None, verdict=True).name == "utilization"
    assert Protocol().centering == "none"


def test_nothing_qualifies_falls_back_to_id_accuracy(use_evidence) -> None:
    # Ψ_eff beats everything by the margins, but T1 is not significant after Holm: condition (a) fails.
    chosen = use_evidence(_evidence(t1=False))
    assert (chosen.rule, chosen.v1_v2_rule, chosen.centering) == ("id_accuracy", "id_accuracy", "none")
    assert "no marker qualifies" in chosen.reason and "120 of 200 pairs, 0.60 [0.55, 0.65]" in chosen.reason
    assert "no rule beats a coin" in chosen.reason
    assert triage_rule(None).name == "id_accuracy"
    # "always v2" with a lower bound above 0.5 on both tasks: the verdict's answer is the recipe prior.
    assert "v2 on the recipe prior" in use_evidence(_evidence(t1=False, always_v2_lo=0.6)).reason
    empty = _evidence(t1=False)
    empty["rules"]["id_accuracy"]["pooled"] = {**_rate(0, 1), "accuracy": None, "pairs": 0}
    assert "ID accuracy had no eligible recipe pair" in defaults.pick_default(empty).reason


def test_the_margin_over_id_accuracy_is_needed_on_each_task() -> None:
    # Task C: 0.69 − 0.60 = 0.09 < 0.10, so Ψ_eff fails (b) although it is significant.
    doc = _evidence(t1=True, psi=(90, 69))
    decision = defaults.plan3_decision(doc["rule_inputs"], doc["rules"])
    check = decision["checks"]["psi_eff"]
    assert check["a_holm"] and not check["b"] and check["c"] and not check["qualifies"]
    assert check["b_vs_id_per_task"] == pytest.approx({"A": 0.30, "C": 0.09})
    assert decision["default"] == "id_accuracy" and decision["nothing_predicts"]
    assert defaults.pick_default(_evidence(t1=True, psi=(90, 70))).rule == "utilization"  # exactly 0.10


def test_a_trivial_baseline_it_does_not_beat_blocks_it() -> None:
    doc = _evidence(t1=True)
    doc["rule_inputs"]["tallies"]["always_v2"]["v1v2"]["pooled"] = [53, 60]  # Ψ_eff 55/60: margin 0.033
    check = defaults.plan3_decision(doc["rule_inputs"], doc["rules"])["checks"]["psi_eff"]
    assert check["c_margins"]["always_v2"] == pytest.approx(2 / 60) and not check["c"]
    assert defaults.pick_default(doc).rule == "id_accuracy"


def test_of_two_qualifying_markers_the_larger_pooled_gain_wins() -> None:
    doc = _evidence(t1=True, t2=True)
    rank = doc["rule_inputs"]["tallies"]["numerical_rank"]
    rank["all"] = {"A": [85, 100], "C": [80, 100], "pooled": [165, 200]}  # beats Ψ_eff's 155 of 200
    rank["decoupled"]["pooled"] = rank["v1v2"]["pooled"] = rank["longer_decides"]["pooled"] = [58, 60]
    doc["rules"]["numerical_rank"] = {"pooled": _rate(165, 200)}
    decision = defaults.plan3_decision(doc["rule_inputs"], doc["rules"])
    assert (
        decision["checks"]["numerical_rank"]["qualifies"]
        and decision["checks"]["psi_eff"]["qualifies"] is False
    )
    assert decision["default"] == "numerical_rank"
