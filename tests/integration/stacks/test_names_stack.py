"""Through the real stack (uvicorn, a Celery worker, Redis, PostgreSQL): a plain torch.export upload,
with no preprocessing anywhere, is scored with a warning that the run keeps and every reader sees; the
run is called by the upload's name and carries its tags and its described architecture."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.integration.stack import Stack
from zootriage.core.zoo.exporting import export_program
from zootriage.core.zoo.program_metadata import ProgramMetadata
from zootriage.core.zoo.programs import NO_PREPROCESS


@pytest.fixture(scope="module")
def plain_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ccexam.models import MNISTNet

    folder = tmp_path_factory.mktemp("plain")
    return export_program(MNISTNet(28), (1, 28, 28), ProgramMetadata(), folder / "plain.pt2")


def test_a_run_without_preprocessing_carries_the_warning(
    stack: Stack, plain_program: Path, clean_db: str
) -> None:
    http = httpx.Client(base_url=stack.base_url, timeout=60)
    form = {"name": "plain cnn", "tags": "origin=stack-test", "architecture": "MNISTNet"}
    files = {"file": ("plain.pt2", plain_program.read_bytes())}
    uploaded = http.post("/v1/checkpoints", files=files, data=form)
    assert uploaded.status_code == 201, uploaded.text
    body = {
        "model": {"source": "checkpoint", "path": uploaded.json()["model_path"]},
        "dataset": {"source": "builtin", "name": "mnist"},
        "sampling": {"classes": 2, "per_class": 10, "split": "test", "seed": 7},
        "protocol": {"n_t": 50, "points_per_class": 10, "repeats": 2},
    }
    submitted = http.post("/v1/jobs", json=body)
    assert submitted.status_code == 202, submitted.text
    deadline = time.monotonic() + 240
    while (job := http.get(submitted.headers["location"]).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    assert job["status"] == "succeeded", job
    run = http.get(f"/v1/runs/{job['run_id']}").json()
    assert run["warnings"] == [NO_PREPROCESS] and run["model_meta"]["warnings"] == [NO_PREPROCESS]
    assert (run["label"], run["name"], run["tags"]) == ("plain cnn", "plain cnn", {"origin": "stack-test"})
    assert run["architecture"] == "MNISTNet"  # the upload's description; the program names none
    listed = http.get("/v1/runs", params={"tag": "origin=stack-test"}).json()["items"]
    assert [item["id"] for item in listed] == [run["id"]] and listed[0]["warnings"] == [NO_PREPROCESS]
