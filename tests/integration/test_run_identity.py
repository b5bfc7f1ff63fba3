"""Jobs on one upload that ask for another preprocessing or label space get runs of their own, through
the real API, worker code and isolated child against PostgreSQL: the first job on a checkpoint no
longer decides what every later job on it is answered with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import MNIST_RAW
from tests.integration.jobs import run_job
from zootriage.app.settings import Settings

pytestmark = pytest.mark.slow  # real jobs, one sandboxed child each


def test_another_preprocessing_or_label_space_is_another_run(
    client: TestClient, settings: Settings, monkeypatch: pytest.MonkeyPatch, digit_programs: dict[str, Path]
) -> None:
    data = digit_programs["ccexam"].read_bytes()
    uploaded = client.post("/v1/checkpoints", files={"file": ("cnn.pt2", data)})
    assert uploaded.status_code == 201, uploaded.text
    model: dict[str, Any] = {"source": "checkpoint", "path": uploaded.json()["model_path"]}

    raw = run_job(client, settings, monkeypatch, {**model, "preprocess": MNIST_RAW}, name="raw pixels")
    own = run_job(client, settings, monkeypatch, model)  # the program's own (normalised) preprocessing
    other = run_job(client, settings, monkeypatch, {**model, "label_space": "letters"})
    jobs = (raw, own, other)
    assert [job["status"] for job in jobs] == ["succeeded"] * 3, jobs
    assert len({job["run_id"] for job in jobs}) == 3

    runs = [client.get(f"/v1/runs/{job['run_id']}").json() for job in jobs]
    assert runs[0]["model"]["preprocess"]["std"] == [1.0] and runs[0]["name"] == "raw pixels"
    assert runs[1]["model"]["preprocess"] is None and runs[1]["name"] is None
    assert runs[2]["model"]["label_space"] == "letters"
    assert len({run["run_key"] for run in runs}) == 3
    values = [{m["name"]: m["value"] for m in run["markers"]} for run in runs]
    assert values[0]["dimension"] != values[1]["dimension"]  # computed on other pixels, not copied
    assert values[1]["id_accuracy"] is not None and values[2]["id_accuracy"] is None  # letters ≠ digits

    again = client.post(
        "/v1/jobs",
        json={
            "model": {**model, "preprocess": MNIST_RAW},
            "dataset": {"source": "builtin", "name": "mnist"},
            "sampling": {"per_class": 3, "split": "test"},
        },
    )
    assert (again.status_code, again.json()["id"]) == (200, raw["run_id"])  # the same question: its run
