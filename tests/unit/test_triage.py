"""The triage rules on hand-made marker records: every verdict branch, ties, noise, missing markers,
Pareto ranking with its tie-break and the agreement flags, and every gate rule kind."""

from __future__ import annotations

import numpy as np
import pytest

from core.triage import (
    GateRule,
    MarkerRecord,
    RuleError,
    UnknownMetric,
    accuracy_pick,
    evaluate_gate,
    pareto_fronts,
    parse_rule,
    rank,
    verdict,
)

KNOWN = {"dimension", "utilization", "id_accuracy", "logme"}


def rec(name: str, d: float | None, u: float | None, **extra: float | None) -> MarkerRecord:
    return MarkerRecord(name, {"dimension": d, "utilization": u, **extra})


# --- verdict ---------------------------------------------------------------------------------------


def test_verdict_both_markers_higher_for_one_side() -> None:
    assert verdict(rec("a", 1.0, 0.3), rec("b", 1.2, 0.4)).decision == "v2"
    result = verdict(rec("a", 1.2, 0.4), rec("b", 1.0, 0.3))
    assert result.decision == "v1"
    assert [c.favours for c in result.comparisons] == ["v1", "v1"]
    assert result.comparisons[0].difference == pytest.approx(-0.2)


def test_verdict_markers_disagree() -> None:
    result = verdict(rec("a", 1.0, 0.5), rec("b", 1.2, 0.4))
    assert result.decision == "undecided"
    assert "disagree" in result.reason and "dimension favours v2" in result.reason


def test_verdict_exact_tie() -> None:
    result = verdict(rec("a", 1.0, 0.3), rec("b", 1.0, 0.4))
    assert result.decision == "undecided"
    assert "tie on dimension" in result.reason


@pytest.mark.parametrize("missing", ["v1", "v2"])
def test_verdict_missing_marker(missing: str) -> None:
    good, bad = rec("a", 1.0, 0.3), rec("b", 1.2, None)
    v1, v2 = (bad, good) if missing == "v1" else (good, bad)
    result = verdict(v1, v2)
    assert result.decision == "undecided"
    assert f"utilization of {missing}" in result.reason


def test_verdict_nan_counts_as_missing() -> None:
    assert verdict(rec("a", float("nan"), 0.3), rec("b", 1.2, 0.4)).decision == "undecided"


def test_verdict_margin_within_noise_is_undecided() -> None:
    v1 = MarkerRecord("a", {"dimension": 1.0, "utilization": 0.30}, {"dimension": 0.05, "utilization": 0.01})
    v2 = MarkerRecord("b", {"dimension": 1.2, "utilization": 0.31}, {"dimension": 0.05, "utilization": 0.01})
    result = verdict(v1, v2)
    assert result.decision == "undecided"
    assert "noise" in result.reason and "utilization" in result.reason and "dimension:" not in result.reason
    assert result.comparisons[1].noise == pytest.approx(np.hypot(0.01, 0.01))


def test_verdict_margin_beyond_noise_wins() -> None:
    v1 = MarkerRecord("a", {"dimension": 1.0, "utilization": 0.30}, {"dimension": 0.05, "utilization": 0.01})
    v2 = MarkerRecord("b", {"dimension": 1.2, "utilization": 0.35}, {"dimension": 0.05, "utilization": 0.01})
    assert verdict(v1, v2).decision == "v2"


def test_accuracy_pick() -> None:
    assert accuracy_pick(76.13, 80.858) == "v2"
    assert accuracy_pick(80.0, 79.0) == "v1"
    assert accuracy_pick(80.0, 80.0) == "undecided"
    assert accuracy_pick(None, 80.0) == "undecided"


# --- ranking ---------------------------------------------------------------------------------------


def test_pareto_fronts() -> None:
    points = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 0.5], [0.5, 3.0], [2.0, 2.0]])
    assert pareto_fronts(points).tolist() == [1, 0, 0, 0, 0]


def test_rank_front_then_product_and_flags() -> None:
    records = [
        rec("dominated", 1.0, 0.1, id_accuracy=0.99, logme=-1.0),
        rec("balanced", 2.0, 0.4, id_accuracy=0.90, logme=1.0),  # score 0.8
        rec("wide", 4.0, 0.15, id_accuracy=0.95, logme=0.5),  # score 0.6, same front
    ]
    ranking = rank(records)
    assert [e.name for e in ranking.entries] == ["balanced", "wide", "dominated"]
    assert [e.front for e in ranking.entries] == [1, 1, 2]
    assert ranking.entries[0].score == pytest.approx(0.8)
    assert ranking.pick == "balanced" and ranking.id_accuracy_pick == "dominated"
    assert ranking.logme_pick == "balanced" and ranking.picks_agree is False
    assert set(ranking.id_accuracy_discordant) == {
        ("balanced", "wide"),
        ("balanced", "dominated"),
        ("wide", "dominated"),
    }
    assert ranking.logme_discordant == ()
    assert all(e.disagrees_with_id_accuracy for e in ranking.entries)
    assert not any(e.disagrees_with_logme for e in ranking.entries)
    assert [e.id_accuracy_rank for e in ranking.entries] == [3, 2, 1]


def test_rank_ties_share_a_rank_and_no_single_pick() -> None:
    twins = [rec("b", 1.0, 0.5, id_accuracy=0.9), rec("a", 1.0, 0.5, id_accuracy=0.9)]
    ranking = rank([*twins, rec("c", 0.5, 0.5)])
    assert [(e.name, e.rank) for e in ranking.entries] == [("a", 1), ("b", 1), ("c", 3)]
    assert ranking.pick is None and ranking.id_accuracy_pick is None and ranking.picks_agree is None
    assert ranking.id_accuracy_discordant == ()  # ties are not disagreements


def test_rank_puts_candidates_missing_a_marker_last() -> None:
    ranking = rank([rec("blank", None, 0.9, id_accuracy=0.99), rec("ok", 1.0, 0.2)])
    assert [(e.name, e.rank) for e in ranking.entries] == [("ok", 1), ("blank", None)]
    assert ranking.entries[1].missing == ("dimension", "logme")
    assert ranking.pick == "ok" and ranking.id_accuracy_pick == "blank"
    assert ranking.id_accuracy_discordant == ()  # an unranked candidate has no geometry order


def test_rank_rejects_duplicate_names() -> None:
    with pytest.raises(ValueError, match="unique"):
        rank([rec("a", 1.0, 1.0), rec("a", 2.0, 2.0)])


def test_rank_of_nothing() -> None:
    ranking = rank([])
    assert ranking.entries == () and ranking.pick is None


# --- gates -----------------------------------------------------------------------------------------


def test_parse_rule() -> None:
    assert parse_rule("dimension: max_relative_drop 0.05", KNOWN) == GateRule(
        "dimension", "max_relative_drop", 0.05
    )
    assert parse_rule("  utilization:min 0.3 ", KNOWN) == GateRule("utilization", "min", 0.3)
    assert str(parse_rule("id_accuracy: max_drop 1e-2", KNOWN)) == "id_accuracy: max_drop 0.01"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("dimension max_drop 0.1", "does not parse"),
        ("dimension: at_least 0.1", "unknown kind 'at_least'"),
        ("dimension: min abc", "not a number"),
        ("dimension: min inf", "finite"),
        ("", "does not parse"),
    ],
)
def test_bad_rules(text: str, match: str) -> None:
    with pytest.raises(RuleError, match=match):
        parse_rule(text, KNOWN)


def test_unknown_metric_is_named() -> None:
    with pytest.raises(UnknownMetric, match="'d_eff'") as caught:
        parse_rule("d_eff: min 1", KNOWN)
    assert caught.value.metric == "d_eff"


def test_gate_rules_each_kind() -> None:
    base = rec("base", 2.0, 0.40, id_accuracy=0.95)
    cand = rec("cand", 1.95, 0.25, id_accuracy=0.93)
    rules = [
        parse_rule(text, KNOWN)
        for text in (
            "dimension: max_relative_drop 0.05",  # 2.5% drop: pass
            "utilization: min 0.3",  # 0.25: fail
            "id_accuracy: max_drop 0.01",  # 0.02 drop: fail
            "dimension: max 3",
            "utilization: max_rise 0",
            "dimension: max_relative_rise 0",
        )
    ]
    result = evaluate_gate(cand, base, rules)
    assert [o.passed for o in result.outcomes] == [True, False, False, True, True, True]
    assert not result.passed
    assert [str(o.rule) for o in result.failures] == ["utilization: min 0.3", "id_accuracy: max_drop 0.01"]
    first = result.outcomes[0]
    assert (first.candidate, first.baseline) == (1.95, 2.0)
    assert first.change == pytest.approx(-0.05) and first.relative_change == pytest.approx(-0.025)
    assert result.outcomes[2].to_dict()["change"] == pytest.approx(-0.02)


def test_gate_fails_closed_on_missing_values() -> None:
    rules = [
        GateRule("dimension", "max_drop", 1.0),
        GateRule("utilization", "min", 0.0),
        GateRule("logme", "max_relative_drop", 0.5),
    ]
    result = evaluate_gate(rec("c", 1.0, None, logme=1.0), rec("b", None, 0.3, logme=0.0), rules)
    assert [o.passed for o in result.outcomes] == [False, False, False]
    assert "baseline has no value" in result.outcomes[0].reason
    assert "candidate has no value" in result.outcomes[1].reason
    assert "baseline value is 0" in result.outcomes[2].reason


def test_gate_without_rules_passes() -> None:
    assert evaluate_gate(rec("c", 1, 1), rec("b", 1, 1), []).passed
