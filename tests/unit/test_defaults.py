"""The product's default rule and centring come from the evidence file's ``default`` (the pre-registered
study's decision): requests that name no rule or centring follow it, and answers say why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zootriage.app.services.errors import ServiceError
from zootriage.app.services.triage import rule_used, triage_rule
from zootriage.core import defaults
from zootriage.core.protocol import Protocol


def _evidence(tmp_path: Path, default: dict[str, object] | None) -> Path:
    doc: dict[str, object] = {"version": 2, "study": "s-test", "primary_outcome": "A:probe", "outcomes": {}}
    if default is not None:
        doc["default"] = default
    path = tmp_path / f"evidence-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def evidence_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def use(default: dict[str, object] | None) -> None:
        monkeypatch.setattr(defaults, "EVIDENCE_PATH", _evidence(tmp_path, default))

    return use


ID_ACCURACY_GLOBAL = {
    "rule": "id_accuracy",
    "v1_v2_rule": "id_accuracy",
    "centering": "global",
    "reason": "no centring qualifies; H1 and H2 significant for 'global' only",
}


def test_without_a_decision_the_papers_choice_holds(evidence_file) -> None:
    evidence_file(None)
    chosen = defaults.product_default()
    assert (chosen.rule, chosen.v1_v2_rule, chosen.centering) == ("geometry", "geometry", "none")
    assert Protocol().centering == "none"


def test_a_decision_sets_the_default_rule_and_centering(evidence_file) -> None:
    evidence_file(ID_ACCURACY_GLOBAL)
    assert Protocol().centering == "global"
    assert Protocol(centering="none").centering == "none"  # a named centring is kept
    assert Protocol.from_dict({"n_t": 10}).centering == "global"
    rule = triage_rule(None)
    assert rule.name == "id_accuracy" and rule.default_reason == ID_ACCURACY_GLOBAL["reason"]
    used = rule_used(rule, Protocol())
    assert used.chosen_by == "default" and used.default_reason == ID_ACCURACY_GLOBAL["reason"]


def test_a_named_rule_is_the_requests(evidence_file) -> None:
    evidence_file(ID_ACCURACY_GLOBAL)
    named = triage_rule("geometry")
    assert named.name == "geometry" and named.default_reason is None
    assert rule_used(named, Protocol()).chosen_by == "request"
    with pytest.raises(ServiceError) as caught:
        triage_rule("no-such-rule")
    assert caught.value.code == "unknown_rule"


def test_the_verdict_may_have_its_own_default(evidence_file) -> None:
    evidence_file({**ID_ACCURACY_GLOBAL, "rule": "geometry", "centering": "none"})
    assert triage_rule(None).name == "geometry"
    assert triage_rule(None, verdict=True).name == "id_accuracy"


def test_the_shipped_default_is_a_rule_and_centering_the_service_knows() -> None:
    chosen = defaults.product_default()
    assert triage_rule(None).name == chosen.rule
    assert triage_rule(None, verdict=True).name == chosen.v1_v2_rule
    assert Protocol().centering == chosen.centering
