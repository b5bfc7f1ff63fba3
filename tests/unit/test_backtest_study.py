"""The pre-registered study end to end on the tiny grid (studies/tiny.toml): the command trains, measures,
analyses, decides and writes its report; a run killed after one model and rerun gives identical results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from zootriage.app.cli import app
from zootriage.core.backtest.config import StudyConfig, load_config
from zootriage.core.backtest.run import run_study

pytestmark = pytest.mark.slow  # trains and measures a tiny zoo

STUDIES = Path(__file__).resolve().parents[2] / "studies"
PLAN_SECTIONS = [
    "## Why a second study",
    "## Hypotheses",
    "## Data and outcomes",
    "## The zoo",
    "## Markers",
    "## Exclusion rules",
    "## Statistics",
    "## The rule that chooses the product's default",
    "## Changes after registration",
]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    result = CliRunner().invoke(
        app,
        [
            "study2",
            str(STUDIES / "tiny.toml"),
            "--out",
            str(folder / "state"),
            "--report-dir",
            str(folder / "report"),
            "--threads",
            "1",
            "--device",
            "cpu",
        ],
    )
    assert result.exit_code == 0, result.output
    return folder


def test_tiny_study_writes_results_report_and_figures(tiny_run: Path) -> None:
    results = json.loads((tiny_run / "report" / "results.json").read_text())
    models = results["models"]
    assert len(models) == 16  # task A 2 × 2 × 2, task B 1 × 2 × 2, v1/v2 1 arch × 2 seeds × 2
    assert {m["arm"] for m in models} == {"zoo", "v1", "v2"}
    live = [m for m in models if not m["diverged"]]
    assert live, "the tiny grid should train at least some models past 50 % train accuracy"
    for m in live:
        assert set(m["outcomes"]) == {"probe", "fewshot_2", "fewshot_3"}
        assert set(m["geometry"]) == {"none", "global"}
        assert m["geometry"]["global"]["markers"]["dimension"] is not None
        assert {"logme", "nc1", "numerical_rank"} <= set(m["markers"])
        assert 0 < m["active_fraction"] <= 1
    assert len(results["floors"]) == 2 + 1  # one untrained model per architecture and task
    assert set(results["splits"]) == {"A", "B"} and results["splits"]["A"]["probe_score"]
    primary = results["analysis"]["primary"]
    assert len(primary) == 14 and all("p_holm" in r and "significant" in r for r in primary.values())
    assert results["decision"]["rule"] in {"geometry", "id_accuracy"} and results["decision"]["reason"]
    evidence = results["evidence"]
    assert evidence["study_id"] == results["study_id"] and evidence["plan_commit"]
    entry = evidence["tasks"]["A"]["global"]["outcomes"]["probe"]
    assert {"geometry", "id_accuracy", "logme", "dimension", "utilization"} <= set(entry)
    assert entry["logme"]["exploratory"] and not entry["geometry"]["exploratory"]
    assert {"accuracy", "delta", "ci", "eligible_pairs"} <= set(entry["geometry"])
    assert {"rho_by_arch", "rho_bar", "ci"} <= set(entry["dimension"]["correlation"])
    report = (tiny_run / "report" / "report.md").read_text()
    positions = [report.index(section) for section in PLAN_SECTIONS]
    assert positions == sorted(positions)
    assert "73%" in report and "exploratory" in report
    for task in ("A", "B"):
        assert (tiny_run / "report" / f"recipes_{task}.png").stat().st_size > 1000


def test_the_study_writes_the_evidence_the_service_reads(tiny_run: Path, tmp_path: Path) -> None:
    """results.json → the versioned evidence file (version 2): every rule of both centrings on every
    outcome, Δ with its interval carried over, the plan's decision as the default."""
    from zootriage.core.backtest.evidence import RULES
    from zootriage.core.evidence import build_from_preregistered, evidence_for, rule_key

    results = json.loads((tiny_run / "report" / "results.json").read_text())
    doc = build_from_preregistered(results)
    assert doc["default"] == results["decision"] and doc["primary_outcome"] in doc["outcomes"]
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps(doc))
    study = results["evidence"]["tasks"]["A"]
    for centering in results["config"]["markers"]["centerings"]:
        for rule, entry in study[centering]["outcomes"]["probe"].items():
            found = evidence_for(rule_key(rule, "one_vs_rest", centering), "A:probe", path)
            if entry["accuracy"] is None:
                assert found is None
                continue
            assert found is not None and rule in RULES
            assert found.win_rate == entry["accuracy"] and found.pairs == entry["eligible_pairs"]
            assert found.delta == entry["delta"]
            assert found.beats_id_accuracy == (entry["ci"] is not None and entry["ci"][0] > 0)


def _small(config: StudyConfig) -> StudyConfig:
    """The tiny grid on one architecture, one seed and without the v1/v2 arm (faster, same code): four
    models, two per task, so a run killed after its first model still has three to resume and each of
    two shards has models of its own."""
    return config.model_copy(
        update={
            "seeds": config.seeds[:1],
            "task_a": config.task_a.model_copy(update={"archs": ["mlp2"]}),
            "v1v2": None,
        }
    )


class Killed(Exception):
    pass


def _kill(name: str) -> None:
    raise Killed(name)


def _records(folder: Path) -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in sorted((folder / "models").glob("*.json"))}


def test_a_run_killed_after_one_model_resumes_to_identical_results(tmp_path: Path) -> None:
    config = _small(load_config(STUDIES / "tiny.toml"))
    straight = run_study(config, tmp_path / "straight", device="cpu", threads=1)
    with pytest.raises(Killed):
        run_study(config, tmp_path / "killed", device="cpu", threads=1, after_model=_kill)
    assert len(_records(tmp_path / "killed")) == 1
    assert not list((tmp_path / "killed" / "models").glob("*.tmp"))
    resumed = run_study(config, tmp_path / "killed", device="cpu", threads=1)
    assert _records(tmp_path / "killed") == _records(tmp_path / "straight")
    assert resumed == straight

    # Two shards split the models between them; the gathering run then trains nothing.
    sharded = tmp_path / "sharded"
    for k in (1, 2):
        assert run_study(config, sharded, device="cpu", threads=1, shard=(k, 2)) is None
        assert 0 < len(_records(sharded)) <= len(_records(tmp_path / "straight"))
    assert run_study(config, sharded, device="cpu", threads=1, after_model=_kill) == straight


def test_a_bad_shard_is_refused(tmp_path: Path) -> None:
    config = _small(load_config(STUDIES / "tiny.toml"))
    with pytest.raises(ValueError, match="shard"):
        run_study(config, tmp_path, device="cpu", threads=1, shard=(3, 2))
    result = CliRunner().invoke(app, ["study2", str(STUDIES / "tiny.toml"), "--shard", "x"])
    assert result.exit_code == 2 and "--shard" in result.output


def test_another_config_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    config = _small(load_config(STUDIES / "tiny.toml"))
    (tmp_path / "config.json").write_text(json.dumps({"name": "other"}))
    with pytest.raises(ValueError, match="another config"):
        run_study(config, tmp_path, device="cpu", threads=1)


def test_bad_config_exits_2_with_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text((STUDIES / "tiny.toml").read_text().replace("seed = 0", "seed = -1", 1))
    result = CliRunner().invoke(app, ["study2", str(bad)])
    assert result.exit_code == 2
    assert "bad_study" in result.output and "seed" in result.output


def test_time_only_projects_the_total_and_trains_nothing_else(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "study2",
            str(STUDIES / "tiny.toml"),
            "--time-only",
            "--threads",
            "1",
            "--device",
            "cpu",
            "--out",
            str(tmp_path / "state"),
        ],
    )
    assert result.exit_code == 0, result.output
    timing = json.loads(result.stdout[result.stdout.index("{") :])
    assert set(timing["seconds_per_epoch_image"]) == {"mlp2", "cnn"}
    assert timing["projected_training_hours"] > 0 and 0 < timing["epoch_scale"] <= 1
    assert not (tmp_path / "state").exists()
