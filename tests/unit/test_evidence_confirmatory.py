"""Evidence of version 3 from a real (tiny) confirmatory study: ``zootriage study3`` trains the grid of
studies/tiny-confirmatory.toml (one architecture, both tasks, two floor models so that Welch's
admission test is defined) and writes results.json and the evidence file where told. The same run,
analysed again with admission opened so that eligible pairs exist, gives a second evidence file. The
readers show every rule with the win rate and interval that the study's own pair-by-pair picks give,
the product's default is the plan's rule applied to the recorded inputs, and a document of another
version or with missing fields is refused with a ValueError."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from zootriage.app.cli import app
from zootriage.app.services.triage import advice_out, rule_used, triage_rule
from zootriage.core import defaults
from zootriage.core.backtest.config import load_study3_config
from zootriage.core.backtest.stats import cluster_bootstrap
from zootriage.core.backtest.study3_analysis import MARKER_RULES
from zootriage.core.backtest.study3_report import build_results3
from zootriage.core.backtest.study3_run import run_study3
from zootriage.core.evidence import (
    EVIDENCE_PATH,
    STUDY3_NAMES,
    build_from_confirmatory,
    evidence_for,
    load_evidence,
    rule_key,
    write_evidence,
)
from zootriage.core.protocol import Protocol
from zootriage.core.triage import MarkerRecord
from zootriage.core.triage.advice import CANDIDATE_RULES, ranking_advice, v1_v2_advice

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "studies" / "tiny-confirmatory.toml"
FROZEN = ROOT / "docs" / "study" / "plan3_frozen_rule.json"
SHIPPED = EVIDENCE_PATH.read_text()
VARIANT = ("one_vs_rest", "none")
# Where a rule is scored (the plan): "always v2" on the v1 vs g-a1-l1-e1 pairs, "longer schedule" on
# the pairs where it decides, every other rule on every eligible pair.
OWN_PAIRS = {"always_v2": "v1v2", "longer_schedule": "longer_decides"}


def _config(tmp_path: Path) -> Path:
    """One architecture, two floor models, and one draw of the few-shot probe (a probe fit per draw is
    most of a tiny model's cost; one draw goes through the same code)."""
    text = TINY.read_text()
    for old, new in (
        ('archs = ["mlp-bn", "mixer-p7-d128-l2"]', 'archs = ["mlp-bn"]'),
        ("floor_models = 1", "floor_models = 2"),
        ("draws = 2", "draws = 1"),
    ):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "tiny3.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("study3")
    evidence = tmp / "out" / "evidence-v3.json"
    args = ["study3", str(_config(tmp)), "--out", str(tmp / "state"), "--device", "cpu"]
    args += [
        "--report-dir",
        str(tmp / "report"),
        "--frozen-rule",
        str(FROZEN),
        "--evidence-out",
        str(evidence),
    ]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    cli = json.loads((tmp / "report" / "results.json").read_text())
    # Four training images per class barely lift a model above its random-initialised floor, so few
    # recipes pass the registered admission; analysed again (the finished run, resumed without
    # training) with every recipe admitted, the same models give eligible pairs.
    config = load_study3_config(_config(tmp))
    run = run_study3(config, tmp / "state", device="cpu", threads=1)
    assert run is not None
    opened = config.model_copy(
        update={"stats": config.stats.model_copy(update={"admission_gain": -1.0, "admission_p": 1.0})}
    )
    results = build_results3(run, opened, plan_commit="test", frozen_path=FROZEN)
    assert results["analysis"]["pairs"], "the tiny study should leave some eligible pairs"
    path = write_evidence(build_from_confirmatory(results), tmp / "evidence-opened.json")
    return {"cli": cli, "cli_path": evidence, "results": results, "path": path, "tmp": tmp}


@pytest.fixture
def use_v3(study: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The product reads the study's evidence file (the default's path, as ``core.defaults`` has it)."""
    monkeypatch.setattr(defaults, "EVIDENCE_PATH", study["path"])
    return Path(study["path"])


def _tallies(pairs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, list[int]]]:
    """(rule, scope) → {arch: [correct, wrong, undecided]} counted from the study's picks per pair."""
    out: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for p in pairs:
        for rule, outcome in p["picks"].items():
            if rule in OWN_PAIRS and not p[OWN_PAIRS[rule]]:
                continue
            slot = ("correct", "wrong", "undecided").index(outcome)
            for scope in (p["task"], "pooled"):
                out[(rule, scope)][p["arch"]][slot] += 1
    return out


def _write(tmp: Path, doc: dict[str, Any], name: str) -> Path:
    path = tmp / name
    path.write_text(json.dumps(doc))
    return path


def test_the_cli_writes_the_evidence_where_told_and_leaves_the_shipped_file(study: dict[str, Any]) -> None:
    results, path = study["cli"], study["cli_path"]
    doc = json.loads(path.read_text())
    assert doc == build_from_confirmatory(results)
    assert doc["version"] == 3 and doc["study"] == "tiny-confirmatory" and doc["outcome"] == "probe20"
    assert doc["decision"]["default"] == results["decision"]["default"]
    assert EVIDENCE_PATH.read_text() == SHIPPED  # not overwritten by default
    # Whatever the registered admission left, the file loads and says why the default is what it is.
    loaded = load_evidence(path)
    assert loaded["default"]["reason"].startswith("study 3 (PLAN-3.md)")
    pooled = {rule: s["pooled"]["pairs"] for rule, s in doc["rules"].items()}
    found = evidence_for(rule_key("utilization", *VARIANT), "probe20", path)
    assert (found is None) == (pooled.get("psi_eff", 0) == 0)


def test_every_rule_shows_the_win_rate_and_interval_of_the_studys_own_picks(study: dict[str, Any]) -> None:
    results, path = study["results"], study["path"]
    n_boot = results["config"]["stats"]["n_boot"]
    assert load_evidence(path)["study"] == "tiny-confirmatory"
    counted = _tallies(results["analysis"]["pairs"])
    assert {r for r, _ in counted} >= {"psi_eff", "numerical_rank", "id_accuracy", "d_and_psi"}
    id_rates = {}
    for (rule, scope), by_arch in sorted(counted.items()):
        correct, wrong, undecided = (sum(x[i] for x in by_arch.values()) for i in range(3))
        pairs = correct + wrong + undecided
        outcome = "probe20" if scope == "pooled" else f"{scope}:probe20"
        found = evidence_for(rule_key(STUDY3_NAMES.get(rule, rule), *VARIANT), outcome, path)
        assert found is not None, (rule, scope)
        assert found.pairs == pairs and found.tally == (correct, wrong, undecided)
        assert found.win_rate == pytest.approx(correct / pairs)  # an undecided pick is not correct
        assert found.undecided == pytest.approx(undecided / pairs)
        ci = cluster_bootstrap({a: (x[0], sum(x)) for a, x in by_arch.items()}, n_boot)
        assert ci is not None and found.win_rate_ci == pytest.approx(ci)
        assert f"{correct} correct, {wrong} wrong, {undecided} undecided" in found.summary()
        if rule == "id_accuracy":
            id_rates[outcome] = correct / pairs
    for outcome, rate in id_rates.items():
        found = evidence_for(rule_key("utilization", *VARIANT), outcome, path)
        assert found is not None and found.id_accuracy_win_rate == pytest.approx(rate)
    assert load_evidence(path)["primary_outcome"] == "probe20"
    # Study 3's names for the product's markers agree with the study's own table.
    for study_name, product_name in STUDY3_NAMES.items():
        if study_name in MARKER_RULES:
            assert MARKER_RULES[study_name][0] == product_name


def test_the_default_follows_the_plans_rule(study: dict[str, Any], use_v3: Path) -> None:
    doc = json.loads(use_v3.read_text())
    decision = defaults.plan3_decision(doc["rule_inputs"], doc["rules"])
    chosen = defaults.product_default()
    assert chosen.rule == defaults.PRODUCT_RULES[decision["default"]] == triage_rule(None).name
    assert chosen.reason == defaults.plan3_reason(decision)
    assert load_evidence()["default"]["rule"] == chosen.rule and load_evidence() is load_evidence(use_v3)
    # Only a marker that qualifies is confirmed; a fallback to ID accuracy leaves every rule exploratory.
    for outcome in load_evidence()["outcomes"].values():
        for key, entry in outcome["rules"].items():
            confirmed = not decision.get("nothing_predicts") and key.startswith(chosen.rule)
            assert entry["confirmed"] is confirmed and entry["exploratory"] is not confirmed
    # The same file with Ψ_eff made to qualify (T1 significant, every margin met) defaults to it.
    inputs = doc["rule_inputs"]
    inputs["significant"]["T1"] = True
    for pair_set, per_scope in inputs["tallies"]["psi_eff"].items():
        for scope, (_, n) in per_scope.items():
            per_scope[scope] = [n, n]
            for base in defaults.BASELINES:
                if base != "psi_eff" and pair_set in inputs["tallies"].get(base, {}):
                    inputs["tallies"][base][pair_set][scope] = [0, n]
    doc.pop("decision")
    psi = load_evidence(_write(study["tmp"], doc, "psi.json"))
    assert psi["default"]["rule"] == "utilization" and "psi_eff qualifies" in psi["default"]["reason"]
    confirmed = psi["outcomes"]["probe20"]["rules"][rule_key("utilization", *VARIANT)]
    assert confirmed["confirmed"] and not confirmed["exploratory"]


def test_the_advice_shows_each_rule_with_its_evidence(study: dict[str, Any], use_v3: Path) -> None:
    chosen = defaults.product_default()
    rule = triage_rule(None)
    values = {"dimension": 10.0, "utilization": 0.5, "numerical_rank": 100.0, "id_accuracy": 0.8}
    better = {"dimension": 12.0, "utilization": 0.6, "numerical_rank": 130.0, "id_accuracy": 0.9}
    a = MarkerRecord("a", values, dict.fromkeys(values, 0.001), repeats=5)
    b = MarkerRecord("b", better, dict.fromkeys(values, 0.001), repeats=5)
    for advice in (v1_v2_advice(a, b, rule, VARIANT), ranking_advice([a, b], rule, VARIANT)):
        assert advice.outcome == "probe20" and advice.study == "tiny-confirmatory"
        assert [x.rule for x in advice.answers] == [
            rule.name,
            *(r for r in CANDIDATE_RULES if r != rule.name),
        ]
        for answer in advice.answers:
            expected = evidence_for(rule_key(answer.rule, *VARIANT), "probe20", use_v3)
            assert answer.evidence == expected
            if expected is not None:
                lo, hi = expected.win_rate_ci
                assert f"{expected.win_rate:.0%} [95% CI {lo:.0%}–{hi:.0%}]" in answer.evidence_text()
                assert answer.validated is (bool(expected.confirmed) and lo > 0.5)
        assert advice.pick is not None and advice.followed == chosen.rule  # the default decides here
        assert chosen.reason in advice.why and "study 3 (PLAN-3.md)" in advice.why
        assert advice.exploratory is not any(x.validated for x in advice.answers if x.rule == advice.followed)
        label = "exploratory" if advice.exploratory else "validated"
        assert advice.summary().endswith(f"{label})")
        # The API's view: each rule with its win rate, interval, pairs and tally.
        out = advice_out(advice)
        for row, answer in zip(out.rules, advice.answers, strict=True):
            e = answer.evidence
            assert row.win_rate == (e.win_rate if e else None) and row.tally == (e.tally if e else None)
            assert row.win_rate_ci == (e.win_rate_ci if e else None) and row.pairs == (e.pairs if e else None)
        assert json.loads(out.model_dump_json())["rules"][0]["evidence"] == advice.answers[0].evidence_text()
    used = rule_used(rule, Protocol())
    assert used.chosen_by == "default" and used.default_reason == chosen.reason
    assert used.evidence_detail is not None and used.evidence_detail["tally"] is not None
    assert "study tiny-confirmatory, probe20" in used.evidence


def test_another_version_or_missing_fields_are_refused(study: dict[str, Any]) -> None:
    tmp, doc = study["tmp"], json.loads(Path(study["path"]).read_text())
    with pytest.raises(ValueError, match="version 4"):
        load_evidence(_write(tmp, {**doc, "version": 4}, "v4.json"))
    with pytest.raises(ValueError, match="lacks rule_inputs"):
        load_evidence(_write(tmp, {k: v for k, v in doc.items() if k != "rule_inputs"}, "no-inputs.json"))
    bad = json.loads(json.dumps(doc))
    del bad["rule_inputs"]["tallies"]
    with pytest.raises(ValueError, match="rule_inputs must have"):
        load_evidence(_write(tmp, bad, "no-tallies.json"))
    bad = json.loads(json.dumps(doc))
    del bad["rules"]["psi_eff"]["pooled"]["ci95"]
    with pytest.raises(ValueError, match="rule psi_eff, pooled lacks ci95"):
        load_evidence(_write(tmp, bad, "no-ci.json"))
    bad = json.loads(json.dumps(doc))
    bad["rules"]["psi_eff"]["pooled"]["pairs"] += 1
    with pytest.raises(ValueError, match="correct \\+ wrong \\+ undecided"):
        load_evidence(_write(tmp, bad, "bad-tally.json"))
    bad = json.loads(json.dumps(doc))
    bad["decision"]["default"] = "numerical_rank"
    with pytest.raises(ValueError, match="records the default 'numerical_rank'"):
        load_evidence(_write(tmp, bad, "bad-decision.json"))
    with pytest.raises(ValueError, match="lacks outcomes"):
        load_evidence(_write(tmp, {"version": 2, "study": "s", "primary_outcome": "A:probe"}, "v2.json"))
    with pytest.raises(ValueError, match="not 3"):
        build_from_confirmatory({"evidence": {**doc, "version": 2}})


def test_the_bootstraps_monte_carlo_error_is_reported_beside_the_decision(study: dict[str, Any]) -> None:
    """Seed 0 of the Monte Carlo check is the analysis' own bootstrap: each decisive bound's side is
    the one the decision read; the report shows the check."""
    results = study["results"]
    mc, accuracy = results["monte_carlo"], results["analysis"]["accuracy"]
    assert mc["seeds"] == 20 and mc["resamples"] > 0
    for task in ("A", "C"):
        bound = mc["decisive"].get(f"always_v2 lower bound, task {task}")
        ci = accuracy.get("always_v2", {}).get(task, {}).get("ci95")
        assert (bound is None) == (ci is None)
        if bound is not None:
            assert bound["holds"] == (ci[0] > 0.5) and bound["min"] <= ci[0] <= bound["max"]
    frozen = results["analysis"]["frozen_rule"]
    if frozen is not None:
        brier = mc["decisive"]["frozen rule Brier upper bound"]
        ece = mc["decisive"]["frozen rule ECE upper bound"]
        assert brier["min"] <= frozen["brier_ci95"][1] <= brier["max"]
        assert (brier["holds"] and ece["holds"]) == frozen["calibrated"]
    assert mc["stable"] == all(b["stable"] for b in mc["decisive"].values())
    report = (study["tmp"] / "report" / "report.md").read_text()
    assert "## Monte Carlo error" in report


@pytest.mark.parametrize(
    ("values", "holds", "stable"), [([0.6, 0.55, 0.7], True, True), ([0.52, 0.49], True, False),
                                    ([0.4, 0.45], False, True), ([0.5, 0.51], False, False)],
)
def test_a_bound_is_stable_only_when_every_seed_puts_it_on_one_side(values, holds, stable) -> None:
    from zootriage.core.backtest.study3_mc import _bound

    found = _bound(values, 0.5, lambda v: v > 0.5)
    assert (found["holds"], found["stable"]) == (holds, stable)
    assert (found["min"], found["max"]) == (min(values), max(values))


def test_the_plans_changes_after_registration_are_carried_into_the_report(study: dict[str, Any]) -> None:
    from zootriage.core.backtest.study3_report import registration_changes

    plan = "# Plan\n\n## Changes after registration\n\n1. one\n2. two\n\n## Later\n\nnot this\n"
    assert registration_changes(plan) == "1. one\n2. two"
    assert registration_changes("# Plan\n\nno such section\n") == ""
    registered = registration_changes((ROOT / "docs" / "study" / "PLAN-3.md").read_text())
    assert registered and "## " not in registered
    report = (study["tmp"] / "report" / "report.md").read_text()
    assert "## Changes after registration" in report
    assert study["cli"]["changes_after_registration"] in report
