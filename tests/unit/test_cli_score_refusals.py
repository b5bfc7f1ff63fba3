"""``zootriage score`` refuses, with one line and status 2 and before any sandboxed child starts, a
checkpoint file that is missing or a folder, a device name that is no device, and a batch size under 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from zootriage.core import scoring

SMALL = ["--dataset", "builtin:mnist", "--classes", "2", "--per-class", "10", "--points-per-class", "5"]


@pytest.fixture(autouse=True)
def no_child(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a child started")

    monkeypatch.setattr(scoring, "new_child", refuse)


def score(*args: str) -> tuple[int, str]:
    from zootriage.app.cli import app

    result = CliRunner().invoke(app, ["score", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result.exit_code, " ".join(result.output.split())  # rich wraps long lines


def test_a_missing_checkpoint_is_refused(tmp_path: Path) -> None:
    code, output = score("--model", f"ckpt:{tmp_path / 'missing.pt2'}", *SMALL)
    assert code == 2 and "bad_checkpoint" in output and "no such file" in output, output


def test_a_folder_as_checkpoint_is_refused(tmp_path: Path) -> None:
    (tmp_path / "folder.pt2").mkdir()
    code, output = score("--model", f"ckpt:{tmp_path / 'folder.pt2'}", *SMALL)
    assert code == 2 and "is a folder" in output, output


def test_a_device_that_is_no_device_is_refused(digit_programs: dict[str, Path]) -> None:
    code, output = score("--model", f"ckpt:{digit_programs['ccexam']}", *SMALL, "--device", "bogus")
    assert code == 2 and "'bogus': not a device" in output, output


@pytest.mark.parametrize("size", ["0", "-3"])
def test_a_batch_size_under_1_is_refused(digit_programs: dict[str, Path], size: str) -> None:
    code, output = score("--model", f"ckpt:{digit_programs['ccexam']}", *SMALL, "--batch-size", size)
    assert code == 2 and "--batch-size" in output, output
