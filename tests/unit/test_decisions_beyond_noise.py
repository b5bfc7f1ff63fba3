"""Decisions that were made without being beyond the noise, found by an audit of the triage rules and
each reproduced here: a spread of 0 over the repeats taken as an exact value, a ranking that picked
the only candidate it could rank, ID-accuracy and LogME picks that ignored the noise, an advice that
said "no difference" where nothing could be compared or followed a rule worse than a coin, the
compare table marking markers that may not decide, and values that overflowed the noise's arithmetic.
"""

from __future__ import annotations

import numpy as np
import pytest

from zootriage.app.services.compare import _cell
from zootriage.core.markers.compute import compute_markers
from zootriage.core.noise import NO_NOISE_ESTIMATE, Estimate
from zootriage.core.protocol import Protocol
from zootriage.core.triage import (
    GateRule,
    MarkerRecord,
    accuracy_pick,
    evaluate_gate,
    make_rule,
    rank,
    verdict,
)
from zootriage.core.triage.advice import CANNOT_DECIDE, NO_DIFFERENCE, ranking_advice, v1_v2_advice

VARIANT = ("one_vs_rest", "none")


def record(name: str, std: float | None = 0.01, repeats: int = 5, **values: float | None) -> MarkerRecord:
    return MarkerRecord(name, values, {m: std for m in values}, repeats=repeats)


def test_a_spread_of_zero_over_the_repeats_is_no_noise_estimate() -> None:
    assert Estimate.from_repeats(927.0, 0.0, 5).se is None
    first, second = record("a", std=0.0, numerical_rank=926.0), record("b", std=0.0, numerical_rank=928.0)
    found = verdict(first, second, make_rule("numerical_rank"))
    assert found.decision == "undecided" and NO_NOISE_ESTIMATE in found.reason  # it said p=0 before


def test_a_rank_capped_by_its_subsets_carries_no_noise_estimate() -> None:
    """numerical_rank of 3 classes × 5 points per subset is at most 14 on every subset of 64-dimensional
    features, whatever the whole sample's rank (29 here): the subsets' spread of 0 is their cap."""
    protocol = Protocol(points_per_class=5, repeats=2, n_t=20, seed=0)
    features = np.random.default_rng(0).normal(size=(30, 64))
    labels = np.repeat(np.arange(3), 10)
    marker = compute_markers(features, labels, protocol=protocol, names=["numerical_rank"], device="cpu")
    value = marker["numerical_rank"]
    assert value.value == 29.0 and value.std is None
    assert value.reason is not None and "14 on every repeat's subset" in value.reason


def test_a_gate_on_a_marker_without_spread_asks_for_images_not_repeats() -> None:
    candidate, baseline = record("c", std=0.0, id_accuracy=0.9997), record("b", std=0.0, id_accuracy=1.0)
    outcome = evaluate_gate(candidate, baseline, [GateRule("id_accuracy", "max_drop", 0.0002)]).outcomes[0]
    assert outcome.status == "inconclusive"  # "failed ... beyond the noise" before
    assert "more images per class" in outcome.reason and "--repeats 2" not in outcome.reason
    once = evaluate_gate(record("c", repeats=1, id_accuracy=0.9), record("b", repeats=1, id_accuracy=0.9),
                         [GateRule("id_accuracy", "max_drop", 0.01)]).outcomes[0]
    assert once.status == "inconclusive" and "--repeats 2" in once.reason


def test_a_ranking_does_not_pick_the_only_candidate_it_can_rank() -> None:
    measured = record("custom", id_accuracy=0.62)
    others = [record("v1", id_accuracy=None), record("v2", id_accuracy=None)]
    ranking = rank([measured, *others], make_rule("id_accuracy"))
    assert ranking.pick is None and "might be the best" in ranking.reason
    assert [e.rank for e in ranking.entries] == [1, None, None]
    alone = rank([measured], make_rule("id_accuracy"))
    assert alone.pick is None and "one candidate" in alone.reason
    assert rank([measured, record("x", id_accuracy=0.3)], make_rule("id_accuracy")).pick == "custom"


def test_id_accuracy_and_logme_pick_and_disagree_only_beyond_the_noise() -> None:
    """Geometry separates X from Y; ID accuracy (0.9000 vs 0.9001, std 0.02) and LogME do not."""
    x = record("X", dimension=2.0, utilization=0.5, id_accuracy=0.9000, logme=1.000)
    y = MarkerRecord("Y", {"dimension": 1.0, "utilization": 0.2, "id_accuracy": 0.9001, "logme": 1.001},
                     {"dimension": 0.01, "utilization": 0.01, "id_accuracy": 0.02, "logme": 0.5}, repeats=5)
    ranking = rank([x, y])
    assert ranking.pick == "X"
    assert (ranking.id_accuracy_pick, ranking.logme_pick, ranking.picks_agree) == (None, None, None)
    assert ranking.id_accuracy_discordant == () and ranking.logme_discordant == ()
    assert [e.id_accuracy_rank for e in ranking.entries] == [1, 1]  # tied within the noise
    # beyond the noise, the same disagreement is reported
    z = record("Z", dimension=1.0, utilization=0.2, id_accuracy=0.99, logme=1.0)
    beyond = rank([x, z])
    assert beyond.id_accuracy_pick == "Z" and beyond.id_accuracy_discordant == (("X", "Z"),)
    assert beyond.picks_agree is False


def test_the_imagenet_accuracy_pick_is_beyond_the_noise_of_its_validation_set() -> None:
    assert accuracy_pick(71.878, 72.154) == "undecided"  # mobilenet_v2: p = 0.33 over 50,000 images
    assert accuracy_pick(76.13, 80.858) == "v2"  # resnet50
    assert accuracy_pick(80.858, 76.13) == "v1"
    assert accuracy_pick(None, 80.0) == "undecided"


def test_advice_says_it_cannot_decide_where_nothing_could_be_compared() -> None:
    """One repeat on each side: every rule lacks a noise estimate, so the answer is not "no difference"."""
    values = {"dimension": 1.0, "utilization": 0.2, "numerical_rank": 10.0}
    v1 = record("v1", repeats=1, id_accuracy=0.70, **values)
    v2 = record("v2", repeats=1, id_accuracy=0.95, **values)
    advice = v1_v2_advice(v1, v2, make_rule("id_accuracy"), VARIANT)
    assert advice.pick is None and advice.answer == CANNOT_DECIDE
    summary = advice.summary()
    assert summary.startswith(CANNOT_DECIDE) and "no pick; confidence of the rule where it picks" in summary
    within = v1_v2_advice(record("v1", id_accuracy=0.9, **values), record("v2", id_accuracy=0.9, **values),
                          make_rule("id_accuracy"), VARIANT)
    assert within.answer == NO_DIFFERENCE


def test_advice_never_falls_back_to_a_rule_worse_than_a_coin() -> None:
    """The shipped evidence gives numerical_rank a win rate below 1/2; when it alone decides, the
    advice does not follow it in the primary rule's place."""
    answers = {a.rule: a for a in ranking_advice([record("a")], make_rule("id_accuracy"), VARIANT).answers}
    evidence = answers["numerical_rank"].evidence
    assert evidence is not None and evidence.win_rate < 0.5
    same = {"dimension": 1.0, "utilization": 0.2, "id_accuracy": 0.9}
    a, b = record("a", numerical_rank=100.0, **same), record("b", numerical_rank=200.0, **same)
    advice = ranking_advice([a, b], make_rule("id_accuracy"), VARIANT)
    deciding = [x.rule for x in advice.answers if x.pick is not None]
    assert deciding == ["numerical_rank"]
    assert advice.pick is None and "better than a coin flip" in advice.why


def test_the_compare_table_does_not_mark_a_marker_that_may_not_decide() -> None:
    first = record("a", dimension=1.0)
    second = MarkerRecord("b", {"dimension": 2.0}, {"dimension": 0.01}, repeats=5,
                          undecidable={"dimension": "draws-only repeats"})
    cell = _cell(first.estimate("dimension"), first, second, "dimension")
    assert not cell.beyond_noise and "not decidable: draws-only repeats" in cell.reason
    plain = record("b", dimension=2.0)
    assert _cell(first.estimate("dimension"), first, plain, "dimension").beyond_noise


@pytest.mark.parametrize(("value", "std"), [(1e200, 1e160), (1.0, 1e160), (1e308, 1.0)])
def test_values_beyond_the_noises_arithmetic_decide_nothing(value: float, std: float) -> None:
    first = MarkerRecord("a", {"dimension": value}, {"dimension": std}, repeats=5)
    second = MarkerRecord("b", {"dimension": -value}, {"dimension": std}, repeats=5)
    assert verdict(first, second, make_rule("dimension")).decision == "undecided"
    outcome = evaluate_gate(second, first, [GateRule("dimension", "max_drop", 1.0)]).outcomes[0]
    assert outcome.status == "inconclusive"


def test_a_relative_rule_on_a_baseline_below_the_doubles_resolution_is_inconclusive() -> None:
    tiny = MarkerRecord("b", {"dimension": 1e-300}, {"dimension": 1e-301}, repeats=5)
    candidate = MarkerRecord("c", {"dimension": 1e-300}, {"dimension": 1e-301}, repeats=5)
    outcome = evaluate_gate(candidate, tiny, [GateRule("dimension", "max_relative_drop", 0.05)]).outcomes[0]
    assert outcome.status == "inconclusive"


def test_an_absolute_rule_ignores_a_degenerate_baseline() -> None:
    candidate = record("c", dimension=20.0)
    baseline = MarkerRecord("b", {"dimension": 1.0}, {"dimension": 0.01}, repeats=5,
                            undecidable={"dimension": "degenerate GLUE regime"})
    absolute, change = GateRule("dimension", "min", 5.0), GateRule("dimension", "max_drop", 1.0)
    assert evaluate_gate(candidate, baseline, [absolute]).status == "passed"
    assert evaluate_gate(candidate, baseline, [change]).status == "inconclusive"


def test_the_normal_tail_for_exact_degrees_of_freedom_matches_scipy() -> None:
    """Estimates with df = ∞ (published accuracies) are tested on the normal tail without scipy (the API
    lists recommendations without importing it); the same p as scipy's."""
    from scipy import stats

    from zootriage.core.noise import compare

    for z in (0.0, 0.5, 1.96, 3.0, 8.0):
        p = compare(Estimate(0.0, 0.5, float("inf")), Estimate(z, 0.5, float("inf"))).p_value
        assert p == pytest.approx(2 * stats.norm.sf(z / (0.5 * 2**0.5)), rel=1e-12, abs=1e-300)


def test_a_gate_on_overlapping_repeats_asks_for_images_not_repeats() -> None:
    """With a class smaller than R·m the repeats share images and their standard error does not shrink
    with R (``core.glue_subsets``): the advice is more images per class. The note is what the worker
    stores with such a marker."""
    note = "overlapping noise: 5 repeats of 50 points share a class of 120; the std is inflated"
    candidate = MarkerRecord("c", {"id_accuracy": 0.337}, {"id_accuracy": 0.05}, repeats=5,
                             notes={"id_accuracy": note})
    baseline = MarkerRecord("b", {"id_accuracy": 0.351}, {"id_accuracy": 0.05}, repeats=5)
    rule = GateRule("id_accuracy", "max_drop", 0.05)
    outcome = evaluate_gate(candidate, baseline, [rule]).outcomes[0]
    assert outcome.status == "inconclusive"
    assert "more repeats do not shrink it" in outcome.reason and "images per class" in outcome.reason
    plain = evaluate_gate(MarkerRecord("c", {"id_accuracy": 0.337}, {"id_accuracy": 0.05}, repeats=5),
                          baseline, [rule]).outcomes[0]
    assert "repeats on both runs (se ∝ 1/√repeats) would decide" in plain.reason


def test_the_advice_picks_as_the_ranking_does() -> None:
    """The ranking advice asks each rule for its pick alone (``rule_pick``): the same pick and reason as
    the whole ranking gives, in every case above (a pick, a shared first place, an unrankable one)."""
    from zootriage.core.triage.ranking import rule_pick

    x = record("X", dimension=2.0, utilization=0.5, id_accuracy=0.9000, logme=1.0)
    y = record("Y", dimension=1.0, utilization=0.2, id_accuracy=0.9001, logme=1.0)
    blank = record("B", dimension=None, utilization=0.5, id_accuracy=0.5, logme=1.0)
    for records in ([x, y], [x, y, blank], [x]):
        for name in ("geometry", "id_accuracy", "logme", "dimension"):
            found = rank(records, make_rule(name))
            assert rule_pick(records, make_rule(name)) == (found.pick, found.reason)
