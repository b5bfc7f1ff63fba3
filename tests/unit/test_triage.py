"""The triage rules on hand-made marker records: every verdict branch (noise, no noise estimate,
degenerate regime, missing markers), noise-aware ranking with its ties and flags, and every gate rule
kind with its pass / fail / inconclusive decision."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from zootriage.core.noise import CONFIDENCE
from zootriage.core.triage import (
    GateRule,
    MarkerRecord,
    RuleError,
    UnknownMetric,
    UnknownRule,
    accuracy_pick,
    evaluate_gate,
    fronts_of,
    make_rule,
    parse_rule,
    rank,
    verdict,
)

KNOWN = {"dimension", "utilization", "id_accuracy", "logme"}
GEOMETRY = ("dimension", "utilization")


def rec(
    name: str,
    d: float | None,
    u: float | None,
    *,
    std: float | None = 0.01,
    repeats: int = 5,
    undecidable: dict[str, str] | None = None,
    **extra: float | None,
) -> MarkerRecord:
    """Markers of one run; the GLUE markers carry ``std`` over ``repeats`` repeats."""
    return MarkerRecord(
        name,
        {"dimension": d, "utilization": u, **extra},
        {m: std for m in GEOMETRY},
        repeats=repeats,
        undecidable=undecidable or {},
    )


# --- verdict ---------------------------------------------------------------------------------------


def test_verdict_both_markers_higher_beyond_the_noise() -> None:
    result = verdict(rec("a", 1.0, 0.3), rec("b", 1.2, 0.4))
    assert result.decision == "v2"
    assert "geometry" in result.reason and "p=" in result.reason
    result = verdict(rec("a", 1.2, 0.4), rec("b", 1.0, 0.3))
    assert result.decision == "v1"
    assert [c.favours for c in result.comparisons] == ["v1", "v1"]
    assert result.comparisons[0].difference == pytest.approx(-0.2)


def test_verdict_p_value_is_welchs() -> None:
    v1 = rec("a", 1.00, 0.30, std=0.02, repeats=5)
    v2 = MarkerRecord("b", {"dimension": 1.03, "utilization": 0.31}, {m: 0.05 for m in GEOMETRY}, repeats=3)
    result = verdict(v1, v2)
    expected = stats.ttest_ind_from_stats(1.03, 0.05, 3, 1.00, 0.02, 5, equal_var=False).pvalue
    assert result.comparisons[0].p_value == pytest.approx(expected, rel=1e-9)
    assert result.comparisons[0].noise == pytest.approx(np.sqrt(0.05**2 / 3 + 0.02**2 / 5))


def test_verdict_markers_disagree() -> None:
    result = verdict(rec("a", 1.0, 0.5), rec("b", 1.2, 0.4))
    assert result.decision == "undecided"
    assert "disagree" in result.reason and "dimension favours v2" in result.reason


@pytest.mark.parametrize(("d2", "u2"), [(1.0, 0.4), (1.005, 0.4)])
def test_verdict_within_the_noise_is_undecided_with_p(d2: float, u2: float) -> None:
    result = verdict(rec("a", 1.0, 0.3), rec("b", d2, u2))
    assert result.decision == "undecided"
    assert result.reason.startswith("undecided: difference within noise (dimension p=")
    assert result.comparisons[0].p_value > 1 - CONFIDENCE


def test_verdict_without_noise_estimate_never_decides() -> None:
    for std, repeats in ((None, 1), (0.01, 1), (None, 5)):
        result = verdict(
            rec("a", 1.0, 0.1, std=std, repeats=repeats), rec("b", 9.0, 0.9, std=std, repeats=repeats)
        )
        assert result.decision == "undecided"
        assert result.reason == "undecided: no noise estimate (repeats=1)"


def test_verdict_in_a_degenerate_regime_is_undecided() -> None:
    flagged = rec("b", 9.0, 0.9, undecidable={"dimension": "n > N"})
    result = verdict(rec("a", 1.0, 0.1), flagged)
    assert result.decision == "undecided"
    assert result.reason.startswith("undecided: not decidable (dimension of v2: n > N")


@pytest.mark.parametrize("missing", ["v1", "v2"])
def test_verdict_missing_marker(missing: str) -> None:
    good, bad = rec("a", 1.0, 0.3), rec("b", 1.2, None)
    v1, v2 = (bad, good) if missing == "v1" else (good, bad)
    result = verdict(v1, v2)
    assert result.decision == "undecided"
    assert f"utilization of {missing}" in result.reason


def test_verdict_nan_counts_as_missing() -> None:
    assert verdict(rec("a", float("nan"), 0.3), rec("b", 1.2, 0.4)).decision == "undecided"


def test_verdict_by_a_deterministic_marker_needs_no_repeats() -> None:
    rule = make_rule("id_accuracy")
    a = rec("a", 1.0, 0.3, std=None, repeats=1, id_accuracy=0.91)
    b = rec("b", 1.0, 0.3, std=None, repeats=1, id_accuracy=0.92)
    result = verdict(a, b, rule)
    assert result.decision == "v2" and result.rule.markers == ("id_accuracy",)
    assert verdict(a, a, rule).decision == "undecided"


def test_rules() -> None:
    assert make_rule("geometry").markers == GEOMETRY
    assert make_rule("logme").higher_is_better == (True,)
    with pytest.raises(UnknownRule, match="unknown triage rule 'nope'"):
        make_rule("nope")
    with pytest.raises(UnknownRule, match="no preferred direction"):
        make_rule("radius")


def test_accuracy_pick() -> None:
    assert accuracy_pick(76.13, 80.858) == "v2"
    assert accuracy_pick(80.0, 79.0) == "v1"
    assert accuracy_pick(80.0, 80.0) == "undecided"
    assert accuracy_pick(None, 80.0) == "undecided"


# --- ranking ---------------------------------------------------------------------------------------


def test_fronts_of_a_relation() -> None:
    dominates = np.zeros((4, 4), dtype=bool)
    dominates[1, 0] = dominates[2, 0] = dominates[0, 3] = True
    assert fronts_of(dominates).tolist() == [1, 0, 0, 2]


def test_rank_by_geometry_beyond_the_noise_and_flags() -> None:
    records = [
        rec("worst", 1.0, 0.1, id_accuracy=0.99, logme=-1.0),
        rec("best", 2.0, 0.4, id_accuracy=0.90, logme=1.0),
        rec("middle", 1.5, 0.2, id_accuracy=0.95, logme=0.5),
    ]
    ranking = rank(records)
    assert [(e.name, e.rank, e.front) for e in ranking.entries] == [
        ("best", 1, 1),
        ("middle", 2, 2),
        ("worst", 3, 3),
    ]
    assert ranking.pick == "best" and ranking.reason.startswith("best: geometry")
    assert ranking.id_accuracy_pick == "worst" and ranking.picks_agree is False
    assert ranking.logme_pick == "best" and ranking.logme_discordant == ()
    assert set(ranking.id_accuracy_discordant) == {("best", "middle"), ("best", "worst"), ("middle", "worst")}
    assert all(e.disagrees_with_id_accuracy for e in ranking.entries)
    assert [e.id_accuracy_rank for e in ranking.entries] == [3, 2, 1]


def test_rank_candidates_within_the_noise_tie() -> None:
    ranking = rank([rec("b", 2.0, 0.5), rec("a", 2.005, 0.501), rec("c", 1.0, 0.2), rec("trade", 3.0, 0.1)])
    assert [(e.name, e.rank) for e in ranking.entries] == [("a", 1), ("b", 1), ("trade", 1), ("c", 4)]
    assert ranking.pick is None
    assert ranking.reason.startswith("undecided: a, b, trade share the first place")
    assert "a vs b: undecided: difference within noise" in ranking.reason


def test_rank_without_noise_estimate_ties_everything() -> None:
    ranking = rank([rec("a", 1.0, 0.1, std=None, repeats=1), rec("b", 5.0, 0.9, std=None, repeats=1)])
    assert [e.rank for e in ranking.entries] == [1, 1]
    assert ranking.pick is None and "no noise estimate (repeats=1)" in ranking.reason


def test_rank_leaves_degenerate_and_incomplete_candidates_unranked() -> None:
    records = [
        rec("flagged", 9.0, 0.9, undecidable={"utilization": "not separable"}),
        rec("blank", None, 0.9, id_accuracy=0.99),
        rec("ok", 1.0, 0.2),
    ]
    ranking = rank(records)
    assert [(e.name, e.rank) for e in ranking.entries] == [("ok", 1), ("blank", None), ("flagged", None)]
    assert ranking.entries[1].missing == ("dimension", "logme")
    assert ranking.entries[2].unrankable == "not decidable (utilization: not separable)"
    assert ranking.pick == "ok"


def test_rank_by_a_chosen_marker() -> None:
    records = [rec("a", 1.0, 0.3, logme=0.2), rec("b", 2.0, 0.5, logme=0.1)]
    ranking = rank(records, make_rule("logme"))
    assert ranking.pick == "a" and ranking.rule.name == "logme"


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


def test_gate_rules_each_kind_beyond_the_noise() -> None:
    base = rec("base", 2.0, 0.40, std=0.001, id_accuracy=0.95)
    cand = rec("cand", 1.95, 0.25, std=0.001, id_accuracy=0.93)
    rules = [
        parse_rule(text, KNOWN)
        for text in (
            "dimension: max_relative_drop 0.05",  # 2.5% drop: pass
            "utilization: min 0.3",  # 0.25: fail
            "id_accuracy: max_drop 0.01",  # 0.02 drop, exact: fail
            "dimension: max 3",
            "utilization: max_rise 0",
            "dimension: max_relative_rise 0",
        )
    ]
    result = evaluate_gate(cand, base, rules)
    assert [o.status for o in result.outcomes] == ["passed", "failed", "failed", "passed", "passed", "passed"]
    assert result.status == "failed" and not result.passed
    assert [str(o.rule) for o in result.failures] == ["utilization: min 0.3", "id_accuracy: max_drop 0.01"]
    first = result.outcomes[0]
    assert (first.candidate, first.baseline) == (1.95, 2.0)
    assert first.change == pytest.approx(-0.05) and first.relative_change == pytest.approx(-0.025)
    assert result.outcomes[2].to_dict()["change"] == pytest.approx(-0.02)
    assert result.outcomes[2].interval == pytest.approx((0.02, 0.02))


def test_gate_within_the_noise_is_inconclusive() -> None:
    std, repeats = 0.05, 5
    base, cand = rec("base", 1.0, 0.4, std=std), rec("cand", 0.94, 0.4, std=std)  # 6% drop ± 3.2%
    rule = parse_rule("dimension: max_relative_drop 0.05", KNOWN)
    outcome = evaluate_gate(cand, base, [rule]).outcomes[0]
    assert outcome.status == "inconclusive" and "within the noise" in outcome.reason
    se = np.sqrt(std**2 / repeats + (0.94 / 1.0) ** 2 * std**2 / repeats)  # delta method
    df = se**4 / ((std**2 / repeats) ** 2 / 4 + (0.94**2 * std**2 / repeats) ** 2 / 4)
    q = stats.t.ppf(0.975, df)
    assert outcome.interval == pytest.approx((0.06 - q * se, 0.06 + q * se), rel=1e-9)
    assert evaluate_gate(cand, base, [rule]).status == "inconclusive"
    clear = evaluate_gate(rec("cand", 0.5, 0.4, std=std), base, [rule])
    assert clear.status == "failed"


def test_gate_without_noise_estimate_or_in_a_degenerate_regime_is_inconclusive() -> None:
    rule = parse_rule("dimension: max_relative_drop 0.05", KNOWN)
    one = evaluate_gate(
        rec("c", 0.5, 0.4, std=None, repeats=1), rec("b", 1.0, 0.4, std=None, repeats=1), [rule]
    )
    assert one.status == "inconclusive" and "no noise estimate (repeats=1)" in one.outcomes[0].reason
    flagged = rec("c", 0.5, 0.4, undecidable={"dimension": "not separable"})
    bad = evaluate_gate(flagged, rec("b", 1.0, 0.4), [rule])
    assert bad.status == "inconclusive" and bad.outcomes[0].reason == "not decidable: not separable"


def test_a_failed_rule_outweighs_an_inconclusive_one() -> None:
    rules = [parse_rule("dimension: min 1", KNOWN), parse_rule("id_accuracy: min 0.95", KNOWN)]
    result = evaluate_gate(rec("c", 1.0, 0.4, id_accuracy=0.9), rec("b", 1.0, 0.4), rules)
    assert [o.status for o in result.outcomes] == ["inconclusive", "failed"]
    assert result.status == "failed"


def test_gate_fails_closed_on_missing_values() -> None:
    rules = [
        GateRule("dimension", "max_drop", 1.0),
        GateRule("utilization", "min", 0.0),
        GateRule("logme", "max_relative_drop", 0.5),
    ]
    result = evaluate_gate(rec("c", 1.0, None, logme=1.0), rec("b", None, 0.3, logme=0.0), rules)
    assert [o.status for o in result.outcomes] == ["failed", "failed", "failed"]
    assert "baseline has no value" in result.outcomes[0].reason
    assert "candidate has no value" in result.outcomes[1].reason
    assert "baseline value is 0" in result.outcomes[2].reason


def test_gate_without_rules_passes() -> None:
    assert evaluate_gate(rec("c", 1, 1), rec("b", 1, 1), []).status == "passed"
