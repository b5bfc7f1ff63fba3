"""``zootriage score``: a table or JSON for good input, a clear message and exit 2 for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.scripts import run_main
from zootriage.app.cli import app, main
from zootriage.core import scoring

pytestmark = pytest.mark.slow  # `zootriage score` runs, sandboxed children

runner = CliRunner()


def test_json_output(digit_programs: dict[str, Path]) -> None:
    result = runner.invoke(app, [
        "score", "--model", f"ckpt:{digit_programs['ccexam']}", "--dataset", "builtin:digits",
        "--classes", "3", "--per-class", "15", "--n-t", "50", "--points-per-class", "10", "--json",
    ])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout[result.stdout.index("{"):])
    assert data["n_images"] == 45 and data["model"]["penultimate"] == "relu_2"
    assert data["markers"]["id_accuracy"]["applicable"] is True  # sklearn digits share MNIST's labels


def test_table_output(digit_programs: dict[str, Path]) -> None:
    result = runner.invoke(app, [
        "score", "--model", f"ckpt:{digit_programs['advtrained']}", "--dataset", "builtin:mnist",
        "--classes", "2", "--per-class", "10", "--n-t", "50", "--points-per-class", "10",
    ])
    assert result.exit_code == 0, result.output
    assert "dimension" in result.stdout and "utilization" in result.stdout and "sha256" in result.stdout


def test_bad_input_is_a_message_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the API refuses at submit time is refused before a sandboxed child starts (seconds of an
    interpreter importing torch); a file that only opening can judge is the child's to refuse."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "empty-torch-home"))
    junk = tmp_path / "junk.pt2"
    junk.write_text("junk")
    started: list[object] = []
    real_child = scoring.new_child
    monkeypatch.setattr(scoring, "new_child", lambda *a, **k: started.append(a) or real_child(*a, **k))
    for args, code, child in [
        (["--model", "tv:resnet19.IMAGENET1K_V1", "--dataset", "builtin:mnist"], "unknown_model", False),
        (["--model", "timm:no_such_net", "--dataset", "builtin:mnist"], "unknown_model", False),
        (["--model", "tv:resnet18", "--dataset", "folder:/etc"], "path_outside_roots", False),
        (["--model", "tv:resnet18", "--dataset", "builtin:mnist", "--classes", "11"], "bad_sampling", False),
        (["--model", "resnet18", "--dataset", "builtin:mnist"], "bad_reference", False),
        (["--model", f"ckpt:{junk}", "--dataset", "builtin:mnist"], "not_a_checkpoint", True),
        # torchvision weights missing from the cache are the child's to fetch (here it cannot)
        (["--model", "tv:resnet18", "--dataset", "builtin:mnist"], "weights_not_available", True),
    ]:
        started.clear()
        result = runner.invoke(app, ["score", *args])
        assert result.exit_code == 2, result.output
        assert code in result.output and "Traceback" not in result.output
        assert bool(started) is child, (args, started)


def test_an_uncached_timm_model_fails_without_asking_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``--download`` the hub is never asked (the weights are looked up in an empty cache), so
    the error says downloads are off rather than that a download failed after the hub's retries.

    The console script runs in this process and refuses the model here, before any sandboxed child
    starts (``core.zoo.checks``, the API's own check), with only the ``HF_HUB_OFFLINE`` that the command
    itself set, as under a fresh ``zootriage``."""
    monkeypatch.setattr(scoring, "new_child", lambda *_a, **_k: pytest.fail("a child was started"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # conftest's; the command must set its own
    code, stderr = run_main(main, [
        "zootriage", "score", "--model", "timm:resnet18.a1_in1k",
        "--dataset", "builtin:digits", "--classes", "2", "--per-class", "5",
    ], capsys)
    said = " ".join(stderr.split())  # as one line, whatever the terminal's width wrapped
    assert code == 2, stderr
    assert "weights_not_available" in said and "Traceback" not in said
    assert "downloads are off (HF_HUB_OFFLINE)" in said and "--download fetches" in said
