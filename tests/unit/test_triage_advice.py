"""Advice per question (issue 24): the v1-vs-v2 case that used to be structurally undecided (ImageNet
weights scored on another label space, so no measured ID accuracy) now gets an answer from the
published acc@1 with its confidence and the rule followed; every rule's win rate is the evidence
file's; picks not validated by the evidence are labelled exploratory."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from zootriage.core import defaults
from zootriage.core.defaults import product_default
from zootriage.core.evidence import build_from_preregistered, load_evidence, rule_key, write_evidence
from zootriage.core.triage import MarkerRecord, make_rule, verdict
from zootriage.core.triage.advice import CANDIDATE_RULES, question_outcome, ranking_advice, v1_v2_advice
from zootriage.core.triage.published import (
    IMAGENET_VAL_IMAGES,
    PUBLISHED_SOURCE,
    published_accuracy,
    with_published,
)

VARIANT = ("one_vs_rest", "none")
# resnet50's published ImageNet-1k acc@1 (torchvision IMAGENET1K_V1, IMAGENET1K_V2).
ACC1 = {"v1": 76.13, "v2": 80.858}


PREREGISTERED = Path(__file__).parents[2] / "docs" / "study" / "2026-12-02" / "results.json"


@pytest.fixture(scope="module")
def preregistered_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("evidence") / "v2.json"
    return write_evidence(build_from_preregistered(json.loads(PREREGISTERED.read_text())), path)


@pytest.fixture(autouse=True)
def _preregistered_evidence(preregistered_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests read the pre-registered study's evidence (version 2, per-rule win rates on every
    outcome), whichever study's file ships; test_evidence_confirmatory reads the confirmatory one."""
    monkeypatch.setattr(defaults, "EVIDENCE_PATH", preregistered_file)


def evidence_file() -> dict:
    """The evidence as the product reads it."""
    return load_evidence()


def rule_entry(rule: str) -> dict:
    doc = evidence_file()
    outcome = (doc.get("questions") or {}).get("v1_v2") or doc["primary_outcome"]
    return dict(doc["outcomes"][outcome]["rules"][rule_key(rule, *VARIANT)])


def rec(name: str, values: dict[str, float | None], std: float = 0.01) -> MarkerRecord:
    """A run scored on a label space other than ImageNet's: no ``id_accuracy`` among its markers."""
    return MarkerRecord(name, values, {m: std for m in values}, repeats=5)


def default_v1_v2_rule():
    chosen = product_default()
    return replace(make_rule(chosen.v1_v2_rule), default_reason=chosen.reason)


# Geometry within the noise; numerical rank prefers v2 beyond it.
V1 = {"dimension": 10.0, "utilization": 0.50, "numerical_rank": 100.0}
V2 = {"dimension": 10.001, "utilization": 0.5001, "numerical_rank": 120.0}


def test_published_accuracy_is_a_fraction_with_its_binomial_error() -> None:
    found = published_accuracy(80.0)
    assert found is not None
    assert found.value == pytest.approx(0.8)
    assert found.se == pytest.approx(math.sqrt(0.8 * 0.2 / IMAGENET_VAL_IMAGES))
    assert published_accuracy(None) is None
    assert published_accuracy(float("nan")) is None
    assert published_accuracy(180.0) is None


def test_published_accuracy_never_mixes_with_a_measured_one() -> None:
    measured = MarkerRecord("a", {"id_accuracy": 0.9}, {"id_accuracy": 0.01}, repeats=5)
    bare = rec("b", {"dimension": 1.0})
    out, used = with_published([measured, bare], {"a": 70.0, "b": 75.0})
    assert not used and out[1].value("id_accuracy") is None


def test_structural_undecided_case_now_answers_with_confidence_and_the_followed_rule() -> None:
    rule = default_v1_v2_rule()
    v1, v2 = rec("v1", V1), rec("v2", V2)
    # Before: the default rule on ImageNet weights scored elsewhere has no ID accuracy to compare.
    if rule.name == "id_accuracy":
        assert verdict(v1, v2, rule).decision == "undecided"
    records, used = with_published([v1, v2], ACC1)
    assert used
    advice = v1_v2_advice(records[0], records[1], rule, VARIANT, PUBLISHED_SOURCE)
    assert advice.pick in ("v1", "v2")
    followed = next(a for a in advice.answers if a.rule == advice.followed)
    assert followed.pick == advice.pick
    entry = rule_entry(advice.followed)
    assert advice.confidence == entry["win_rate"]
    assert advice.confidence_ci == tuple(entry["win_rate_ci"])
    assert advice.confidence_pairs == entry["pairs"]
    assert "confidence" in advice.summary() and advice.followed in advice.summary()
    if rule.name == "id_accuracy":
        assert advice.followed == "id_accuracy" and advice.pick == "v2"
        assert "product's default" in advice.why
        assert followed.source == PUBLISHED_SOURCE


def test_every_candidate_rule_is_shown_with_the_evidence_files_win_rate() -> None:
    records, _ = with_published([rec("v1", V1), rec("v2", V2)], ACC1)
    advice = v1_v2_advice(records[0], records[1], make_rule("geometry"), VARIANT)
    assert {a.rule for a in advice.answers} == set(CANDIDATE_RULES)
    assert advice.outcome == question_outcome("v1_v2")
    for answer in advice.answers:
        entry = rule_entry(answer.rule)
        assert answer.evidence is not None
        assert answer.evidence.win_rate == entry["win_rate"]
        assert answer.evidence.win_rate_ci == tuple(entry["win_rate_ci"])
        assert answer.evidence.pairs == entry["pairs"]
        assert answer.validated == (not entry["exploratory"] and entry["win_rate_ci"][0] > 0.5)
    by_rule = {a.rule: a for a in advice.answers}
    assert by_rule["geometry"].pick is None and "noise" in by_rule["geometry"].reason
    assert by_rule["numerical_rank"].pick == "v2"


def test_when_the_primary_rule_cannot_decide_the_best_evidenced_deciding_rule_is_followed() -> None:
    # Without any ID accuracy: only numerical rank decides.
    advice = v1_v2_advice(rec("v1", V1), rec("v2", V2), make_rule("id_accuracy"), VARIANT)
    assert advice.pick == "v2" and advice.followed == "numerical_rank"
    assert "id_accuracy cannot decide" in advice.why and "best-evidenced" in advice.why
    by_rule = {r.rule: r for r in advice.answers}
    assert by_rule["id_accuracy"].answer == "cannot decide"  # missing, not "no difference"
    assert by_rule["geometry"].answer == "no difference beyond the noise"
    entry = rule_entry("numerical_rank")
    assert advice.confidence == entry["win_rate"]
    assert advice.exploratory == (entry["exploratory"] or entry["win_rate_ci"][0] <= 0.5)


def test_a_validated_rule_is_preferred_and_not_labelled_exploratory() -> None:
    validated = [
        r
        for r in CANDIDATE_RULES
        if not rule_entry(r)["exploratory"] and rule_entry(r)["win_rate_ci"][0] > 0.5
    ]
    if not validated:
        pytest.skip("the evidence file validates no candidate rule")  # the evidence decides, not the code
    name = validated[0]
    markers = make_rule(name).markers
    v1 = {**V1, **{m: 1.0 for m in markers}}
    v2 = {**V2, **{m: 2.0 for m in markers}}
    advice = v1_v2_advice(rec("v1", v1), rec("v2", v2), make_rule("id_accuracy"), VARIANT)
    assert advice.pick == "v2"
    chosen = next(a for a in advice.answers if a.rule == advice.followed)
    assert chosen.validated and not advice.exploratory


def test_an_unvalidated_pick_is_labelled_exploratory() -> None:
    # Only the ID-accuracy rule decides; the evidence file shows it at chance on this question.
    entry = rule_entry("id_accuracy")
    records, _ = with_published([rec("v1", {"dimension": 1.0}), rec("v2", {"dimension": 1.0})], ACC1)
    advice = v1_v2_advice(records[0], records[1], make_rule("id_accuracy"), VARIANT)
    assert advice.followed == "id_accuracy" and advice.pick == "v2"
    assert advice.exploratory == (entry["exploratory"] or entry["win_rate_ci"][0] <= 0.5)
    assert ("exploratory" in advice.summary()) == advice.exploratory


def test_nothing_separates_them_says_so() -> None:
    same = {"dimension": 1.0, "utilization": 0.5, "numerical_rank": 10.0}
    advice = v1_v2_advice(rec("v1", same), rec("v2", same), make_rule("geometry"), VARIANT)
    assert advice.pick is None and advice.followed == "geometry"
    assert "no difference beyond the noise" in advice.summary()
    assert advice.confidence == rule_entry("geometry")["win_rate"]


def test_a_rule_the_evidence_lacks_says_no_evidence() -> None:
    advice = v1_v2_advice(rec("v1", V1), rec("v2", V2), make_rule("geometry"), ("pairs", "none"))
    by_rule = {a.rule: a for a in advice.answers}
    assert by_rule["geometry"].evidence is None
    assert by_rule["geometry"].evidence_text() == "no evidence"
    assert not by_rule["geometry"].validated


def test_ranking_advice_follows_the_named_rule_when_it_decides() -> None:
    records = [
        rec("a", {"dimension": 1.0, "utilization": 0.1, "numerical_rank": 5.0}),
        rec("b", {"dimension": 2.0, "utilization": 0.2, "numerical_rank": 9.0}),
        rec("c", {"dimension": 3.0, "utilization": 0.3, "numerical_rank": 1.0}),
    ]
    advice = ranking_advice(records, make_rule("geometry"), VARIANT)
    assert advice.question == "ranking" and advice.pick == "c" and advice.followed == "geometry"
    assert advice.why == "the rule the request named"
    by_rule = {a.rule: a.pick for a in advice.answers}
    assert by_rule["numerical_rank"] == "b" and by_rule["id_accuracy"] is None
