"""``zootriage study3``: clear errors with exit status 2, the cost check's JSON, and a tiny study run
end to end in two shards, then gathered, analysed and reported."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from zootriage.app.cli import app

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "studies" / "tiny-confirmatory.toml"


def _one_arch(tmp_path: Path, *more: tuple[str, str]) -> Path:
    """The tiny grid on one architecture with one draw of the few-shot probe (a probe fit per draw is
    most of a tiny model's cost; one draw goes through the same code), and any ``more`` changes."""
    text = TINY.read_text()
    for old, new in (
        ('archs = ["mlp-bn", "mixer-p7-d128-l2"]', 'archs = ["mlp-bn"]'),
        ("draws = 2", "draws = 1"),
        *more,
    ):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "one.toml"
    path.write_text(text)
    return path


def test_bad_input_exits_2_with_a_message(tmp_path: Path) -> None:
    missing = CliRunner().invoke(app, ["study3", str(tmp_path / "nope.toml")])
    assert missing.exit_code == 2 and "no study config" in missing.output
    bad = tmp_path / "bad.toml"
    bad.write_text(TINY.read_text().replace("draws = 2", "draws = 0"))
    result = CliRunner().invoke(app, ["study3", str(bad), "--out", str(tmp_path / "s")])
    assert result.exit_code == 2 and "probe.draws" in result.output
    shard = CliRunner().invoke(app, ["study3", str(TINY), "--shard", "x", "--out", str(tmp_path / "s")])
    assert shard.exit_code == 2 and "--shard must look like" in shard.output
    threads = CliRunner().invoke(app, ["study3", str(TINY), "--threads", "0"])
    assert threads.exit_code == 2 and "--threads" in threads.output


def test_time_only_prints_the_projection(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["study3", str(_one_arch(tmp_path)), "--time-only", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    timing = json.loads(result.stdout)
    assert timing["trained_models"] == 36 and timing["floor_models"] == 2
    assert set(timing["seconds_per_epoch_image"]) == {"A", "C"} and timing["epoch_factor"] == 1.0


def test_shards_then_the_report(tmp_path: Path) -> None:
    """One seed: 2 tasks × 9 recipes = 18 models, each shard with models of both tasks."""
    config = _one_arch(tmp_path, ("seeds = [0, 1]", "seeds = [0]"))
    state, report = tmp_path / "state", tmp_path / "report"
    base = ["study3", str(config), "--out", str(state), "--device", "cpu"]
    for k in ("1/2", "2/2"):
        shard = CliRunner().invoke(app, [*base, "--shard", k])
        assert shard.exit_code == 0, shard.output
    assert len(list((state / "models").glob("*.json"))) == 18
    done = CliRunner().invoke(app, [*base, "--report-dir", str(report)])
    assert done.exit_code == 0, done.output
    results = json.loads((report / "results.json").read_text())
    assert len(results["models"]) == 18 and set(results["analysis"]["tests"]) == {"T1", "T2", "T3"}
    assert results["evidence"]["version"] == 3 and results["evidence"]["outcome"] == "probe20"
    assert set(results["secondary"]) == {"global/probe20", "none/probe", "none/fewshot_2"}
    sensitivity = results["sensitivity_accuracy_filter"]
    assert sensitivity["train_acc_min"] == 0.99 and sensitivity["models"] <= len(results["models"])
    # One floor model per architecture: Welch's test is undefined, so nothing is admitted and no test
    # can be assessed; the report says so rather than inventing a verdict.
    assert not results["analysis"]["pairs"]
    assert all(not t["assessable"] for t in results["analysis"]["tests"].values())
    text = (report / "report.md").read_text()
    assert (
        "## Primary tests" in text
        and "not assessable" in text
        and "## Decision" in text
        and "## Secondary analyses" in text
    )
