"""``Attributes``: a core result read into a response model by attribute, with the service's fields."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from zootriage.app.schemas.attributes import Attributes
from zootriage.app.schemas.triage import AdviceOut, Comparison, RankingOut, RuleUsed
from zootriage.core.triage.ranking import Ranking
from zootriage.core.triage.verdict import MarkerComparison


def _used() -> RuleUsed:
    return RuleUsed(
        name="geometry", markers=["dimension"], glue_variant="one_vs_rest,none", noise_test="welch",
        description="d", evidence="e", evidence_detail=None, chosen_by="request", default_reason=None,
    )  # fmt: skip


def _advice() -> AdviceOut:
    return AdviceOut(
        question="ranking", evidence_outcome="A:probe", study="s", pick="a", answer="a",
        followed_rule="geometry", why="w", exploratory=True, confidence=None, confidence_ci=None,
        confidence_pairs=None, summary="a", rules=[],
    )  # fmt: skip


def test_a_ranking_is_read_by_attribute_with_the_fields_given_in_front() -> None:
    result = Ranking(
        entries=(), pick="a", reason="why", id_accuracy_pick="b", logme_pick=None,
        id_accuracy_discordant=(("a", "b"),), logme_discordant=(),
    )  # fmt: skip
    out = RankingOut.model_validate(
        Attributes(result, entries=[], rule=_used(), advice=_advice()), from_attributes=True
    )
    assert out.pick == "a" and out.reason == "why" and out.rule.name == "geometry"
    assert out.picks_agree is False  # a property of the core result, read like a field
    assert out.id_accuracy_discordant == [("a", "b")] and out.entries == []


def test_a_field_the_core_result_lacks_fails_instead_of_going_missing() -> None:
    result = Ranking(
        entries=(), pick=None, reason="r", id_accuracy_pick=None, logme_pick=None,
        id_accuracy_discordant=(), logme_discordant=(),
    )  # fmt: skip
    with pytest.raises(ValidationError, match="rule"):  # the core result's rule is no RuleUsed
        RankingOut.model_validate(Attributes(result, entries=[]), from_attributes=True)


def test_a_comparison_is_read_field_by_field() -> None:
    core = MarkerComparison("dimension", 1.0, 2.0, 0.1, None, 1.0, 0.2, 0.01, "v2")
    out = Comparison.model_validate(core, from_attributes=True)
    assert out.model_dump() == {
        "marker": "dimension", "v1": 1.0, "v2": 2.0, "v1_std": 0.1, "v2_std": None, "difference": 1.0,
        "noise": 0.2, "p_value": 0.01, "favours": "v2",
    }  # fmt: skip
