"""The triage rules on hand-made marker records: every verdict branch (noise, no noise estimate,
degenerate regime, missing markers), noise-aware ranking with its ties and flags, and every gate rule
kind with its pass / fail / inconclusive decision."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from zootriage.core.noise import CONFIDENCE, NO_NOISE_ESTIMATE
from zootriage.core.triage import (
    ALPHA,
    GATE_TEST,
    GateRule,
    GateStatus,
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
    """Markers of one run; every marker carries ``std`` over ``repeats`` repeats."""
    return MarkerRecord(
        name,
        {"dimension": d, "utilization": u, **extra},
        {m: std for m in (*GEOMETRY, *extra)},
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
        assert result.reason == f"undecided: {NO_NOISE_ESTIMATE}"


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


def test_verdict_by_a_marker_outside_glue_decides_by_its_noise() -> None:
    rule = make_rule("id_accuracy")
    a = rec("a", 1.0, 0.3, std=0.002, id_accuracy=0.91)
    b = rec("b", 1.0, 0.3, std=0.002, id_accuracy=0.92)
    result = verdict(a, b, rule)
    assert result.decision == "v2" and result.rule.markers == ("id_accuracy",)
    assert verdict(a, a, rule).decision == "undecided"
    noisy = verdict(
        rec("a", 1.0, 0.3, std=0.05, id_accuracy=0.91), rec("b", 1, 0.3, std=0.05, id_accuracy=0.92), rule
    )
    assert noisy.decision == "undecided" and "within noise" in noisy.reason
    # No std stored (a run from before every marker carried one): it never decides.
    bare = [MarkerRecord(n, {"id_accuracy": v}, {}, repeats=5) for n, v in (("a", 0.5), ("b", 0.9))]
    assert verdict(bare[0], bare[1], rule).reason == f"undecided: {NO_NOISE_ESTIMATE}"


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
    assert fronts_of(dominates) == [1, 0, 0, 2]
    assert fronts_of([]) == []


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
    assert ranking.pick is None and NO_NOISE_ESTIMATE in ranking.reason


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
    # "ok" is the only candidate ranked, not the best beyond the noise: either of the others may be
    assert ranking.pick is None and "cannot rank might be the best" in ranking.reason
    assert "blank: missing marker(s): dimension" in ranking.reason
    assert "flagged: not decidable" in ranking.reason


def test_rank_by_a_chosen_marker() -> None:
    records = [rec("a", 1.0, 0.3, logme=0.2), rec("b", 2.0, 0.5, logme=0.1)]
    ranking = rank(records, make_rule("logme"))
    assert ranking.pick == "a" and ranking.rule.name == "logme"


def test_rank_rejects_duplicate_names() -> None:
    with pytest.raises(ValueError, match="unique"):
        rank([rec("a", 1.0, 1.0), rec("a", 2.0, 2.0)])


def test_rank_of_nothing() -> None:
    ranking = rank([])
    assert ranking.entries == () and ranking.pick is None and ranking.reason == "undecided: no candidates"


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


def _q(df: float) -> float:
    """The one-sided quantile t_{1−α, df} of every gate decision."""
    return float(stats.t.ppf(1 - ALPHA, df))


def test_gate_rules_each_kind_beyond_the_noise() -> None:
    base = rec("base", 2.0, 0.40, std=0.001, id_accuracy=0.95)
    cand = rec("cand", 1.95, 0.25, std=0.001, id_accuracy=0.93)
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
    assert [o.status for o in result.outcomes] == ["passed", "failed", "failed", "passed", "passed", "passed"]
    assert result.status == "failed" and not result.passed and result.test == GATE_TEST
    assert [str(o.rule) for o in result.failures] == ["utilization: min 0.3", "id_accuracy: max_drop 0.01"]
    first = result.outcomes[0]
    assert (first.candidate, first.baseline) == (1.95, 2.0)
    assert first.change == pytest.approx(-0.05) and first.relative_change == pytest.approx(-0.025)
    assert result.outcomes[2].to_dict()["change"] == pytest.approx(-0.02)
    se = 0.001 * np.sqrt(2 / 5)  # equal stds over 5 repeats each: Welch df = 2·(5 − 1)
    q = _q(8)
    assert result.outcomes[2].interval == pytest.approx((0.02 - q * se, 0.02 + q * se), rel=1e-9)


# An unchanged candidate against its baseline, both with std S over 5 repeats: the drop is 0 with
# se = S·√(2/5) and Welch df 8; q = t_{0.95, 8}. It passes once the margin reaches q·se.
S = 0.04
SE = S * np.sqrt(2 / 5)


def _drop_gate(drop: float, margin: float) -> tuple[str, str]:
    base, cand = rec("base", 1.0, 0.4, std=S), rec("cand", 1.0 - drop, 0.4, std=S)
    outcome = evaluate_gate(cand, base, [GateRule("dimension", "max_drop", margin)]).outcomes[0]
    return outcome.status, outcome.reason


@pytest.mark.parametrize("factor", [1.001, 2.5, 10.0])
def test_an_unchanged_model_passes_once_the_margin_exceeds_q_se(factor: float) -> None:
    status, reason = _drop_gate(0.0, factor * _q(8) * SE)
    assert status == "passed" and "beyond the noise" in reason


def test_an_unchanged_model_under_a_margin_below_the_noise_is_inconclusive_with_the_repeats_needed() -> None:
    margin = 0.999 * _q(8) * SE
    status, reason = _drop_gate(0.0, margin)
    # R′ = ⌈V·(2q/δ)²⌉ with V = Σ Rᵢ·seᵢ² = 2·S²: 4× the repeats halve 2·q·se, ÷0.999².
    needed = int(np.ceil(2 * S**2 * (2 * _q(8) / margin) ** 2))
    assert status == "inconclusive" and needed == 21
    assert "is larger than the margin" in reason and "21 repeats on both runs" in reason


def test_a_degraded_model_fails() -> None:
    q = _q(8)
    # Beyond the margin beyond the noise: L = D − q·se > δ.
    assert _drop_gate(0.05 + 1.01 * q * SE, 0.05)[0] == "failed"
    # Inside [L, U] but the test resolves the margin (2·q·se ≤ δ = 3·q·se): not shown no worse.
    status, reason = _drop_gate(2.5 * q * SE, 3 * q * SE)
    assert status == "failed" and "not shown <=" in reason and "an unchanged model would pass" in reason
    # The same drop under a margin the noise cannot resolve (2·q·se > δ = 1.5·q·se): inconclusive,
    # R′ = ⌈2·S²·(2q/δ)²⌉ = ⌈8 / (1.5² · 0.4)⌉ = 9.
    status, reason = _drop_gate(1.5 * q * SE, 1.5 * q * SE)
    assert status == "inconclusive" and "9 repeats on both runs" in reason
    # A better candidate passes any non-negative margin it is shown within.
    assert _drop_gate(-2 * q * SE, 0.0)[0] == "passed"


def test_an_absolute_rule_near_its_threshold_says_how_many_repeats_decide_at_the_estimate() -> None:
    se = S / np.sqrt(5)  # the candidate alone: df 4
    threshold = 1.0 - 0.6 * _q(4) * se
    outcome = evaluate_gate(
        rec("c", 1.0, 0.4, std=S), rec("b", 1.0, 0.4, std=S), [GateRule("dimension", "min", threshold)]
    )
    status, reason = outcome.outcomes[0].status, outcome.outcomes[0].reason
    # R′ = ⌈V·(q/|δ − Ŝ|)²⌉, V = 5·se² = S²: ⌈5 / 0.36⌉ = 14.
    assert status == "inconclusive" and "contains the threshold" in reason and "14 repeats" in reason
    assert _drop_gate(0.0, 0.0)[0] == "inconclusive"  # a zero margin cannot be shown for no change
    assert "sits on the threshold" in _drop_gate(0.0, 0.0)[1]


def test_a_relative_rule_uses_the_delta_method() -> None:
    std, repeats = 0.05, 5
    base, cand = rec("base", 1.0, 0.4, std=std), rec("cand", 0.94, 0.4, std=std)  # 6% drop ± 3.1%
    rule = parse_rule("dimension: max_relative_drop 0.05", KNOWN)
    outcome = evaluate_gate(cand, base, [rule]).outcomes[0]
    se = np.sqrt(std**2 / repeats + (0.94 / 1.0) ** 2 * std**2 / repeats)  # delta method
    df = se**4 / ((std**2 / repeats) ** 2 / 4 + (0.94**2 * std**2 / repeats) ** 2 / 4)
    q = _q(df)
    assert outcome.interval == pytest.approx((0.06 - q * se, 0.06 + q * se), rel=1e-9)
    assert outcome.status == "inconclusive" and 2 * q * se > 0.05
    needed = int(np.ceil(repeats * se**2 * (2 * q / 0.05) ** 2))
    assert f"{needed} repeats on both runs" in outcome.reason
    assert evaluate_gate(rec("cand", 0.5, 0.4, std=std), base, [rule]).status == "failed"


def _simulated(
    rng: np.random.Generator, name: str, mean: float, sigma: float, repeats: int = 5
) -> MarkerRecord:
    """A run's marker as stored: the mean and sample std of ``repeats`` normal repeats."""
    draws = rng.normal(mean, sigma, repeats)
    return MarkerRecord(
        name, {"dimension": float(draws.mean())}, {"dimension": float(draws.std(ddof=1))}, repeats
    )


def test_error_rates_under_simulated_noise() -> None:
    """Repeats drawn from N(μ, σ²): an unchanged candidate fails at most α of the time (every failure
    needs Ŝ/se > q), passes nearly always under a margin well above the noise, and one exactly at the
    margin passes at most α of the time; an inconclusive answer always has 2·q·se > δ."""
    rng = np.random.default_rng(0)
    trials, sigma = 2000, 1.0
    tolerance = 4 * np.sqrt(ALPHA * (1 - ALPHA) / trials)

    def statuses(true_drop: float, margin: float) -> list[GateStatus]:
        rule = GateRule("dimension", "max_drop", margin)
        found = []
        for _ in range(trials):
            base = _simulated(rng, "b", 10.0, sigma)
            cand = _simulated(rng, "c", 10.0 - true_drop, sigma)
            outcome = evaluate_gate(cand, base, [rule]).outcomes[0]
            if outcome.status == "inconclusive":
                assert outcome.interval is not None and outcome.interval[1] - outcome.interval[0] > margin
            found.append(outcome.status)
        return found

    for margin in (1.0, 3.0, 5.0):
        unchanged = statuses(0.0, margin)
        assert unchanged.count("failed") / trials <= ALPHA + tolerance
        at_margin = statuses(margin, margin)
        assert at_margin.count("passed") / trials <= ALPHA + tolerance
    assert statuses(0.0, 5.0 * sigma).count("passed") / trials >= 0.95
    assert statuses(8.0 * sigma, 1.0 * sigma).count("failed") / trials >= 0.95


def test_gate_without_noise_estimate_or_in_a_degenerate_regime_is_inconclusive() -> None:
    rule = parse_rule("dimension: max_relative_drop 0.05", KNOWN)
    one = evaluate_gate(
        rec("c", 0.5, 0.4, std=None, repeats=1), rec("b", 1.0, 0.4, std=None, repeats=1), [rule]
    )
    assert one.status == "inconclusive" and NO_NOISE_ESTIMATE in one.outcomes[0].reason
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
    # a missing value fails closed; a relative change from a baseline of 0 is undefined, which shows
    # nothing worse: inconclusive, pointing at the absolute kind (so the gate still does not pass)
    assert [o.status for o in result.outcomes] == ["failed", "failed", "inconclusive"]
    assert result.status == "failed"
    assert "baseline has no value" in result.outcomes[0].reason
    assert "candidate has no value" in result.outcomes[1].reason
    assert "baseline value is 0; use max_drop" in result.outcomes[2].reason


def test_gate_without_rules_passes() -> None:
    assert evaluate_gate(rec("c", 1, 1), rec("b", 1, 1), []).status == "passed"
