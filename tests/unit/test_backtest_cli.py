"""``zootriage backtest FILE.csv`` and the CSV reader behind it: the pre-registered method, the same
answer ``core.backtest.on_runs.analyse`` (what ``POST /v1/backtests`` runs) gives on the same runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from zootriage.app.cli import app
from zootriage.core.backtest.csv_runs import read_runs
from zootriage.core.backtest.on_runs import analyse


def _csv() -> str:
    """Two architectures × 3 recipes × 2 seeds: the outcome and dimension rise with the recipe, ID
    accuracy falls with it; a text column and a model without a recipe."""
    lines = ["id,architecture,recipe,created_at,ood_accuracy,dimension,utilization,id_accuracy"]
    for arch, offset in (("resnet", 0.0), ("vgg", 0.05)):
        for recipe in range(3):
            for seed in range(2):
                outcome = 0.5 + 0.1 * recipe + offset + 0.002 * seed
                dim, util, acc = 1.0 + recipe + 0.01 * seed, 0.1 * recipe + 0.003 * seed, 0.95 - 0.01 * recipe
                lines.append(
                    f"{arch}{recipe}{seed},{arch},r{recipe},2026-01-0{seed + 1},{outcome},{dim},{util},{acc}"
                )
    lines.append("loose,resnet,,2026-01-09,0.4,1.0,,0.9")
    return "\n".join(lines) + "\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "zoo.csv"
    path.write_text(text)
    return path


def test_reader_finds_markers_recipes_and_skips_text_columns(tmp_path: Path) -> None:
    runs, skipped = read_runs(_write(tmp_path, _csv()), outcome="ood_accuracy")
    assert skipped == ["created_at"]
    assert [r.run for r in runs[:2]] == ["resnet00", "resnet01"] and runs[0].recipe == "r0"
    assert runs[-1].recipe is None and runs[-1].values == {
        "dimension": 1.0,
        "utilization": None,
        "id_accuracy": 0.9,
    }


def test_reader_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="row 2: outcome 'n/a'"):
        read_runs(_write(tmp_path, _csv().replace(",0.5,", ",n/a,", 1)), outcome="ood_accuracy")
    with pytest.raises(ValueError, match="no outcome column 'ood'"):
        read_runs(_write(tmp_path, _csv()), outcome="ood")
    with pytest.raises(ValueError, match="no recipe column 'seed_group'"):
        read_runs(_write(tmp_path, _csv()), outcome="ood_accuracy", recipe="seed_group")
    with pytest.raises(ValueError, match="appears twice"):
        read_runs(_write(tmp_path, _csv() + "resnet00,resnet,r0,x,0.5,1,0.1,0.9\n"), outcome="ood_accuracy")


def test_backtest_command_gives_the_preregistered_answer(tmp_path: Path) -> None:
    path = _write(tmp_path, _csv())
    result = CliRunner().invoke(app, ["backtest", str(path), "--json", "--n-boot", "200", "--n-perm", "500"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    runs, _ = read_runs(path, outcome="ood_accuracy")
    expected = analyse(runs, ["dimension", "id_accuracy", "utilization"], n_boot=200, n_perm=500, seed=0)
    assert body == json.loads(json.dumps({**expected, "n_models": 13}))
    assert body["method"] == "preregistered" and body["recipes_by_architecture"] == {"resnet": 3, "vgg": 3}
    dim = body["rules"]["dimension"]
    assert dim["correlation"]["rho_bar"] == pytest.approx(1.0)  # ρ = 1 in each architecture
    assert dim["pairwise"]["accuracy"] == pytest.approx(1.0) and dim["pairwise"]["eligible_pairs"] == 6
    assert dim["pairwise"]["delta"] == pytest.approx(1.0)  # ID accuracy picks the worse recipe each time
    assert body["rules"]["geometry"]["pairwise"]["accuracy"] == pytest.approx(1.0)
    assert any("1 run(s) have no recipe label" in note for note in body["notes"])


def test_backtest_command_prints_a_table(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["backtest", str(_write(tmp_path, _csv())), "--n-boot", "100", "--n-perm", "0"]
    )
    assert result.exit_code == 0, result.output
    assert "6 recipes" in result.stdout and "dimension" in result.stdout and "geometry" in result.stdout


def test_backtest_command_fails_cleanly(tmp_path: Path) -> None:
    one_seed = "\n".join(line for line in _csv().splitlines() if not line.split(",")[0].endswith("1")) + "\n"
    result = CliRunner().invoke(app, ["backtest", str(_write(tmp_path, one_seed))])
    assert result.exit_code == 2 and "no recipe has 2 or more runs" in result.output
    missing = CliRunner().invoke(app, ["backtest", str(tmp_path / "nope.csv")])
    assert missing.exit_code == 2 and "cannot read" in missing.output
    bad = CliRunner().invoke(app, ["backtest", str(_write(tmp_path, _csv())), "--n-perm", "-1"])
    assert bad.exit_code == 2 and "--n-perm" in bad.output
