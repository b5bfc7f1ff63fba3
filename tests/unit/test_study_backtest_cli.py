"""``zootriage backtest FILE.csv`` and the CSV reader behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from zootriage.app.cli import app
from zootriage.core.study.csv_records import read_records

CSV = """id,architecture,created_at,ood_accuracy,dimension,utilization,id_accuracy
r1,resnet,2026-01-01,0.70,3.0,0.30,0.90
r2,resnet,2026-01-02,0.60,2.0,0.20,0.95
r3,resnet,2026-01-03,0.50,1.0,0.10,0.93
r4,vgg,2026-01-04,0.40,1.5,,0.91
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "zoo.csv"
    path.write_text(text)
    return path


def test_reader_finds_markers_and_skips_text_columns(tmp_path: Path) -> None:
    records, skipped = read_records(_write(tmp_path, CSV), outcome="ood_accuracy")
    assert skipped == ["created_at"]
    assert [r.model for r in records] == ["r1", "r2", "r3", "r4"]
    assert records[3].markers == {"dimension": 1.5, "utilization": None, "id_accuracy": 0.91}


def test_reader_rejects_bad_outcomes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="row 3: outcome 'n/a'"):
        read_records(_write(tmp_path, CSV.replace("0.60", "n/a")), outcome="ood_accuracy")
    with pytest.raises(ValueError, match="no outcome column 'ood'"):
        read_records(_write(tmp_path, CSV), outcome="ood")


def test_backtest_command_prints_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["backtest", str(_write(tmp_path, CSV)), "--json", "--n-boot", "200"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["markers"]["dimension"]["by_architecture"]["resnet"]["pearson"] == pytest.approx(1.0)
    assert body["geometry_rule"] == {"pairs": 3, "wins": 1.0, "losses": 0.0, "undecided": 0.0}


def test_backtest_command_fails_cleanly(tmp_path: Path) -> None:
    short = "\n".join(CSV.splitlines()[:3]) + "\n"
    result = CliRunner().invoke(app, ["backtest", str(_write(tmp_path, short))])
    assert result.exit_code == 2 and "at least 3 models" in result.output
    missing = CliRunner().invoke(app, ["backtest", str(tmp_path / "nope.csv")])
    assert missing.exit_code == 2 and "cannot read" in missing.output
