"""The versioned evidence file: rebuilt from the newest study's results it reproduces core/evidence.json,
and each rule's line says plainly whether the back-test shows it beating ID accuracy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats

from zootriage.core.evidence import (
    EVIDENCE_PATH,
    build_evidence,
    build_from_preregistered,
    build_from_results,
    evidence_for,
    load_evidence,
    rule_key,
    statement,
    wilson,
)

RESULTS = Path(__file__).parents[2] / "docs" / "study" / "2026-12-02" / "results.json"
# the results the shipped core/evidence.json is rebuilt from (the newest analysed study)
SHIPPED_FROM = Path(__file__).parents[2] / "docs" / "study" / "2026-12-04-confirmatory" / "results.json"


def test_the_shipped_file_is_the_newest_study_rebuilt() -> None:
    rebuilt = build_from_results(json.loads(SHIPPED_FROM.read_text()))
    assert rebuilt == json.loads(EVIDENCE_PATH.read_text())


@pytest.fixture
def preregistered(tmp_path: Path) -> Path:
    """The pre-registered study's version-2 document, rebuilt from its results."""
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(build_from_preregistered(json.loads(RESULTS.read_text()))))
    return path


def test_the_first_study_still_builds_a_version_1_document(tmp_path: Path) -> None:
    """The 2026-11-30 study (no pre-registration) keeps its own builder: 41 of 198 geometry picks."""
    first = Path(__file__).parents[2] / "docs" / "study" / "2026-11-30" / "results.json"
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(build_evidence(json.loads(first.read_text()), "2026-11-30/default")))
    found = evidence_for(rule_key("geometry", "one_vs_rest", "none"), path=path)
    assert found is not None and found.pairs == 198 and found.win_rate == pytest.approx(41 / 198)
    assert load_evidence(path)["version"] == 1 and not found.beats_id_accuracy


def test_wilson_interval() -> None:
    lo, hi = wilson(41, 198)
    assert lo < 41 / 198 < hi
    ci = stats.binomtest(41, 198).proportion_ci(method="wilson")
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-9)
    assert wilson(0, 0) == (0.0, 1.0)


def test_the_preregistered_geometry_rule_is_reported_as_not_beating_id_accuracy(preregistered: Path) -> None:
    """The pre-registered study's primary outcome (task A's probe): Δ's interval holds 0 under both
    centrings, so neither variant is shown as beating ID accuracy, and the default is ID accuracy."""
    results = json.loads(RESULTS.read_text())
    assert load_evidence(preregistered)["version"] == 2
    for centering in ("none", "global"):
        found = evidence_for(rule_key("geometry", "one_vs_rest", centering), path=preregistered)
        assert found is not None and found.outcome == "A:probe"
        study = results["evidence"]["tasks"]["A"][centering]["outcomes"]["probe"]["geometry"]
        assert found.pairs == study["eligible_pairs"] and found.win_rate == pytest.approx(study["accuracy"])
        assert found.delta_ci is not None and found.delta_ci[0] < 0 < found.delta_ci[1]
        assert not found.beats_id_accuracy
        assert "does NOT show this rule beating ID accuracy" in found.summary()
        assert set(found.correlation_by_architecture) == set()  # a two-marker rule has no ρ
    dimension = evidence_for(rule_key("dimension", "one_vs_rest", "none"), path=preregistered)
    assert dimension is not None and set(dimension.correlation_by_architecture) == {
        "cnn",
        "mlp2",
        "mlp4",
        "resnet-w8",
        "resnet-w16",
    }
    assert load_evidence(preregistered)["default"]["rule"] == results["decision"]["rule"] == "id_accuracy"


def test_rule_keys_and_missing_evidence(preregistered: Path) -> None:
    assert rule_key("dimension", "random", "global") == "dimension[random,global]"
    assert rule_key("logme", "random", "global") == "logme"
    assert evidence_for("logme", outcome="B:fewshot_5", path=preregistered) is not None
    assert evidence_for("capacity[one_vs_rest,none]", path=preregistered) is None
    missing = statement("capacity[one_vs_rest,none]", path=preregistered)
    assert "did not test rule capacity[one_vs_rest,none]" in missing


def test_another_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps({"version": 99}))
    with pytest.raises(ValueError, match="version 99"):
        load_evidence(path)


def _v2(tmp_path: Path, delta_ci: list[float]) -> Path:
    """A version-2 document with one rule whose win rate alone would 'beat' ID accuracy."""
    entry = {
        "pairs": 40,
        "win_rate": 0.9,
        "win_rate_ci": list(wilson(36, 40)),
        "undecided": None,
        "delta": 0.2,
        "delta_ci": delta_ci,
        "p": 0.04,
        "exploratory": False,
        "correlation_by_architecture": {"cnn": {"geometry": None}},
    }
    doc = {
        "version": 2,
        "study": "s",
        "plan_commit": "c",
        "primary_outcome": "A:probe",
        "default": {"rule": "id_accuracy"},
        "outcomes": {
            "A:probe": {"id_accuracy_win_rate": 0.5, "rules": {"geometry[one_vs_rest,none]": entry}}
        },
    }
    path = tmp_path / f"ev-{delta_ci[0]}.json"
    path.write_text(json.dumps(doc))
    return path


def test_version_2_decides_on_the_interval_of_delta(tmp_path: Path) -> None:
    """With a Δ interval the comparison is Δ's (paired, recipe-bootstrap), not the win rate's alone."""
    key = "geometry[one_vs_rest,none]"
    crossing = evidence_for(key, path=_v2(tmp_path, [-0.05, 0.4]))
    assert crossing is not None and crossing.win_rate_ci[0] > crossing.id_accuracy_win_rate
    assert not crossing.beats_id_accuracy and "NOT" in crossing.summary() and "Δ +20%" in crossing.summary()
    above = evidence_for(key, path=_v2(tmp_path, [0.01, 0.4]))
    assert above is not None and above.beats_id_accuracy
    assert above.to_dict()["delta_ci"] == [0.01, 0.4]
