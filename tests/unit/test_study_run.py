"""The whole study on a tiny grid: trains, resumes, analyses and writes its report; configs validate."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from zootriage.app.cli import app
from zootriage.core.study.analysis import analyze_study
from zootriage.core.study.config import load_config, parse_config
from zootriage.core.study.report import write_report
from zootriage.core.study.run import run_study

STUDIES = Path(__file__).resolve().parents[2] / "studies"


def tiny() -> dict[str, Any]:
    """2 architectures × 1 lr × 1 weight decay × 1 seed × 2 optimisers, a few hundred images, 1 epoch."""
    data = tomllib.loads((STUDIES / "default.toml").read_text())
    data["name"] = "tiny"
    data["train"].update(seeds=[0], epochs=1, batch_size=32, per_class=30)
    data["train"]["optimizers"] = {
        "sgd": {"lrs": [0.05], "weight_decays": [1e-4]},
        "adamw": {"lrs": [2e-3], "weight_decays": [1e-2]},
    }
    data["keep"] = {"train_acc_min": 0.0, "id_acc_band": [0.0, 1.0]}
    data["markers"].update(per_class=20, points_per_class=10, n_t=20, repeats=1)
    data["ood"].update(per_class=20, c_grid=[1.0])
    data["shifts"]["per_class"] = 10
    data["stats"]["n_boot"] = 100
    return data


def test_shipped_configs_parse() -> None:
    assert len(load_config(STUDIES / "default.toml").specs()) == 32
    assert len(load_config(STUDIES / "full.toml").specs()) == 192


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d: d["train"].update(archs=["resnet"]), "train.archs: .*unknown 'resnet'"),
        (lambda d: d["keep"].update(id_acc_band=[0.9, 0.8]), "keep.id_acc_band: .*low <= high"),
        (lambda d: d["keep"].update(id_acc_band=[0.9]), "keep.id_acc_band: .*at least 2"),
        (lambda d: d["markers"].update(variants=[["random", "none"]]), "must include the default"),
        (lambda d: d["markers"].update(variants=[["random", "local"]]), "markers.variants.0.1: "),
        (lambda d: d["ood"].update(typo=1), "ood.typo: unknown key"),
        (lambda d: d.pop("stats"), "stats: missing"),
        (lambda d: d["train"].update(epochs="ten"), "train.epochs: Input should be a valid integer"),
        (lambda d: d["train"].update(epochs=True), "train.epochs: Input should be a valid integer"),
        (lambda d: d["train"]["optimizers"].update(lion={"lrs": [1.0], "weight_decays": [0.0]}),
         "train.optimizers: .*unknown optimizer"),
        (lambda d: d["train"]["optimizers"]["sgd"].update(lrs=[]), "train.optimizers.sgd.lrs: "),
        (lambda d: d["stats"].update(n_boot=0), "stats.n_boot: Input should be greater than 0"),
        (lambda d: d["ood"].update(test_fraction=1.0), "ood.test_fraction: Input should be less than 1"),
    ],
)
def test_bad_configs_name_the_problem(edit: Any, message: str) -> None:
    data = tiny()
    edit(data)
    with pytest.raises(ValueError, match=message):
        parse_config(data)


@pytest.mark.slow
def test_tiny_study_runs_resumes_and_reports(tmp_path: Path) -> None:
    torch.set_num_threads(2)
    config = parse_config(tiny())
    state = tmp_path / "state"
    results = run_study(config, state, device="cpu")
    assert [m["arch"] for m in results["models"]] == ["mlp", "mlp", "cnn", "cnn"]
    model = results["models"][0]
    assert model["kept"] and {"dimension", "utilization", "id_accuracy", "participation_ratio"} <= set(
        model["markers"]
    )
    assert "dimension[random,global]" in model["markers"]
    assert model["markers"]["dimension"] == model["markers"]["dimension[one_vs_rest,none]"]
    assert set(model["outcomes"]) == {"animal-mnist", "noise", "blur", "contrast", "rotation"}
    assert set(results["random_init_probe"]) == {"mlp", "cnn"}

    said: list[str] = []
    again = run_study(config, state, device="cpu", progress=said.append)
    assert sum("done before" in line for line in said) == 4 and again["models"] == results["models"]

    analysis = analyze_study(results, n_boot=100, seed=0)
    entry = analysis["animal-mnist"]
    assert entry["backtest"]["n_models"] == 4
    assert set(entry["variant_rules"]) == {
        "one_vs_rest,none",
        "one_vs_rest,global",
        "random,none",
        "random,global",
        "id_accuracy",
    }
    assert set(entry["by_setting"]["dimension"]) == {"mlp/sgd", "mlp/adamw", "cnn/sgd", "cnn/adamw"}
    write_report(results, analysis, tmp_path / "report", title="tiny")
    assert (tmp_path / "report" / "scatter_animal-mnist.png").stat().st_size > 0
    saved = json.loads((tmp_path / "report" / "results.json").read_text())
    assert (
        saved["analysis"]["animal-mnist"]["backtest"]["markers"].keys() == entry["backtest"]["markers"].keys()
    )
    assert "Beside the paper" in (tmp_path / "report" / "report.md").read_text()

    other = tiny()
    other["seed"] = 1
    with pytest.raises(ValueError, match="another config"):
        run_study(parse_config(other), state, device="cpu")


def test_study_command_rejects_a_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\nseed = 0\n")
    result = CliRunner().invoke(app, ["study", str(bad), "--out", str(tmp_path / "s")])
    assert result.exit_code == 2 and "train: missing" in result.output
