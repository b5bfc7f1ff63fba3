"""Fewer than 2 images per class is refused where it is asked for: every marker needs 2 per class."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from zootriage.app.cli import app as cli
from zootriage.app.schemas.jobs import JobRequest
from zootriage.core.data.refs import PER_CLASS_MIN, Sampling
from zootriage.core.inputs import class_labels

MODEL = {"source": "checkpoint", "path": "f" * 64 + ".pt2"}
DATASET = {"source": "builtin", "name": "mnist"}


def test_the_floor_is_what_the_markers_need() -> None:
    """``class_labels`` (the check every marker's inputs pass) takes 2 points a class, refuses 1."""
    class_labels([0, 0, 1, 1], 4)
    with pytest.raises(ValueError, match="at least 2 points"):
        class_labels([0, 1, 1], 3)
    assert PER_CLASS_MIN == 2


@pytest.mark.parametrize("per_class", [0, 1])
def test_a_job_asking_fewer_is_invalid(per_class: int) -> None:
    with pytest.raises(ValidationError, match="per_class"):
        JobRequest.model_validate({"model": MODEL, "dataset": DATASET, "sampling": {"per_class": per_class}})
    assert Sampling(per_class=2).per_class == 2


def test_the_score_command_refuses_one_per_class() -> None:
    result = CliRunner().invoke(
        cli, ["score", "--model", "tv:resnet18.DEFAULT", "--dataset", "builtin:mnist", "--per-class", "1"]
    )
    assert result.exit_code == 2, result.output
    assert "per_class" in result.output
