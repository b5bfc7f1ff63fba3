"""The plan's rule that picks the product's default, on constructed primary results for each branch."""

from __future__ import annotations

from typing import Any

from zootriage.core.backtest.analysis import with_holm
from zootriage.core.backtest.decision import decide

CENTERINGS = ("none", "global")


def primary(**overrides: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every one of the 14 tests not significant, Δ = 0 with interval [−0.1, 0.1]; then overrides."""
    out: dict[str, dict[str, Any]] = {}
    for c in CENTERINGS:
        for t in ("A", "B"):
            for h in ("H1", "H2"):
                out[f"{h}/{t}/{c}"] = {"p": 0.5, "p_holm": 1.0, "significant": False, "ci": [-0.1, 0.3]}
            out[f"H3/{t}/{c}"] = {
                "delta": 0.0,
                "p": 0.5,
                "p_holm": 1.0,
                "significant": False,
                "ci": [-0.1, 0.1],
            }
        out[f"H4/{c}"] = {"delta": 0.0, "p": 0.5, "p_holm": 1.0, "significant": False, "ci": [-0.2, 0.2]}
    for key, change in overrides.items():
        out[key.replace("_", "/")].update(change)
    return out


SIG = {"significant": True, "p": 0.001, "p_holm": 0.01}


def test_one_qualifying_centring_becomes_the_default_with_the_geometry_rule() -> None:
    results = primary(H3_A_global={**SIG, "delta": 0.2}, H3_B_global={"delta": -0.05, "ci": [-0.2, 0.02]})
    decision = decide(results, CENTERINGS)
    assert decision["rule"] == "geometry" and decision["centering"] == "global"
    assert decision["v1_v2_rule"] == "geometry" and decision["qualifying"] == ["global"]


def test_of_two_qualifying_centrings_the_larger_mean_delta_wins() -> None:
    results = primary(
        H3_A_none={**SIG, "delta": 0.30},
        H3_B_none={"delta": -0.10, "ci": [-0.3, 0.0]},  # mean 0.10
        H3_A_global={**SIG, "delta": 0.15},
        H3_B_global={"delta": 0.10, "ci": [-0.05, 0.25]},  # mean 0.125
    )
    decision = decide(results, CENTERINGS)
    assert decision["qualifying"] == ["none", "global"]
    assert (decision["rule"], decision["centering"]) == ("geometry", "global")


def test_task_b_negative_with_confidence_disqualifies() -> None:
    results = primary(H3_A_none={**SIG, "delta": 0.3}, H3_B_none={"delta": -0.3, "ci": [-0.5, -0.01]})
    decision = decide(results, CENTERINGS)
    assert (decision["rule"], decision["centering"], decision["v1_v2_rule"]) == (
        "id_accuracy",
        "none",
        "id_accuracy",
    )
    assert "negative" in decision["reasons"]["none"]


def test_no_qualifier_but_markers_confirmed_for_one_centring_only_moves_the_centring() -> None:
    sig_markers = {f"{h}_{t}_global": SIG for h in ("H1", "H2") for t in ("A", "B")}
    decision = decide(primary(**sig_markers), CENTERINGS)
    assert (decision["rule"], decision["centering"]) == ("id_accuracy", "global")
    assert "global" in decision["reason"]


def test_no_qualifier_and_markers_confirmed_for_both_keeps_none() -> None:
    sig_markers = {f"{h}_{t}_{c}": SIG for h in ("H1", "H2") for t in ("A", "B") for c in CENTERINGS}
    decision = decide(primary(**sig_markers), CENTERINGS)
    assert (decision["rule"], decision["centering"]) == ("id_accuracy", "none")


def test_nothing_significant_gives_id_accuracy_and_none() -> None:
    decision = decide(primary(), CENTERINGS)
    assert (decision["rule"], decision["centering"], decision["qualifying"]) == ("id_accuracy", "none", [])
    assert "not confirmed" in decision["reason"]


def test_holm_marks_significance_and_not_assessable_tests_enter_with_p_one() -> None:
    tests = {f"H3/{t}/{c}": {"p": 0.001} for t in ("A", "B") for c in CENTERINGS}
    tests["H4/none"] = {"p": 0.02}
    excl = {
        t: {"degenerate": {"none": {"assessable": True}, "global": {"assessable": t == "B"}}}
        for t in ("A", "B")
    }
    marked = with_holm(tests, excl, alpha=0.05)
    assert marked["H3/A/global"]["assessable"] is False and marked["H3/A/global"]["significant"] is False
    assert marked["H3/A/global"]["p_holm"] == 1.0
    # m = 5 (the not-assessable test counts with p = 1): 5 · 0.001 = 0.005; H4 is 4th: 2 · 0.02 = 0.04
    assert marked["H3/A/none"]["significant"] and marked["H3/A/none"]["p_holm"] == 0.005
    assert marked["H4/none"]["p_holm"] == 0.04 and marked["H4/none"]["significant"]
