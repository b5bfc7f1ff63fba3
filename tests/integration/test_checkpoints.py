"""Checkpoint uploads: accepted after the static check, refused with the reason otherwise; loading
problems surface when a job loads the file in the worker's isolated child."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.integration.jobs import run_job
from zootriage.app.settings import Settings


def test_a_program_is_stored_under_its_sha256(
    client: TestClient, mnist_program: Path, settings: Settings
) -> None:
    data = mnist_program.read_bytes()
    response = client.post("/v1/checkpoints", files={"file": ("mnist.pt2", data)})
    assert response.status_code == 201, response.text
    body = response.json()
    sha = hashlib.sha256(data).hexdigest()
    assert body["id"] == sha
    assert body["model_path"] == f"{sha}.pt2"
    assert body["format"] == "torch_export"
    assert body["size_bytes"] == len(data)
    assert (settings.effective_upload_dir / f"{sha}.pt2").read_bytes() == data
    same = client.post("/v1/checkpoints", files={"file": ("mnist.pt2", data)})
    assert same.status_code == 200
    assert same.json() == body
    renamed = client.post("/v1/checkpoints", files={"file": ("again.pt2", data)}, data={"name": "again"})
    assert renamed.status_code == 200 and renamed.json() == body  # a label: the stored record answers
    other_space = {"label_space": "x"}  # what jobs inherit: the stored record's may not change
    relabelled = client.post("/v1/checkpoints", files={"file": ("mnist.pt2", data)}, data=other_space)
    assert relabelled.status_code == 409
    assert relabelled.json()["code"] == "checkpoint_exists"
    assert sha in relabelled.json()["message"] and "label_space=None" in relabelled.json()["message"]
    assert not list(settings.effective_upload_dir.glob(".upload-*"))


def test_a_state_dict_is_checked_against_its_architecture_when_a_job_loads_it(
    client: TestClient, tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API only checks the file statically; the worker's child finds the keys do not fit."""
    import torch
    import torchvision

    state = torchvision.models.shufflenet_v2_x0_5(num_classes=10).state_dict()
    path = tmp_path / "sn.pt"
    torch.save(state, path)
    form = {"library": "torchvision", "architecture": "resnet18"}
    accepted = client.post("/v1/checkpoints", files={"file": ("sn.pt", path.read_bytes())}, data=form)
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["architecture"] == "resnet18"
    unknown = {"library": "torchvision", "architecture": "no_such_net"}
    refused = client.post("/v1/checkpoints", files={"file": ("x.pt", path.read_bytes())}, data=unknown)
    assert refused.status_code == 422 and refused.json()["code"] == "unknown_model"
    model = {"source": "checkpoint", "path": accepted.json()["model_path"], "library": "torchvision",
             "architecture": "resnet18"}
    job = run_job(client, settings, monkeypatch, model)
    assert job["status"] == "failed"
    assert job["error"]["code"] == "checkpoint_key_mismatch", job
    message = job["error"]["message"]
    # Named by the file the user uploaded, never by the stored <sha256>.pt they have not seen.
    assert message.startswith("sn.pt does not fit ResNet: missing keys: "), message
    assert accepted.json()["id"] not in message
    assert "unexpected keys: " in message and "(+" in message  # the first few, then a count


def test_a_job_past_its_time_limit_fails_with_a_clear_code(
    client: TestClient, mnist_program: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    uploaded = client.post("/v1/checkpoints", files={"file": ("mnist.pt2", mnist_program.read_bytes())})
    model = {"source": "checkpoint", "path": uploaded.json()["model_path"]}
    job = run_job(client, settings.model_copy(update={"job_time_limit_s": 1}), monkeypatch, model)
    assert job["status"] == "failed"
    assert job["error"] == {
        "code": "time_limit", "message": "loading the model and extracting features ran past 1 s"
    }


@pytest.mark.parametrize(
    ("name", "payload", "status", "code"),
    [
        ("junk.pt", b"definitely not a checkpoint", 422, "not_a_checkpoint"),
        ("junk.pt2", b"PK\x03\x04 truncated", 422, "checkpoint_truncated"),
        ("weights.onnx", b"\x08\x01", 422, "unsupported_format"),
        ("big.pt", b"\0" * (2 * 1024 * 1024 + 1), 413, "payload_too_large"),
    ],
)
def test_bad_uploads_are_refused_with_a_reason(
    client: TestClient, settings: Settings, name: str, payload: bytes, status: int, code: str
) -> None:
    response = client.post("/v1/checkpoints", files={"file": (name, payload)})
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
    sha = hashlib.sha256(payload).hexdigest()
    assert not list(settings.effective_upload_dir.glob(f"{sha}*"))
    assert not list(settings.effective_upload_dir.glob(".upload-*"))


def test_an_upload_needs_a_multipart_file_part(client: TestClient) -> None:
    no_file = client.post("/v1/checkpoints", data={"architecture": "x"}, files={"other": ("a", b"1")})
    assert no_file.status_code == 422
    assert no_file.json()["code"] == "invalid_upload"
    not_multipart = client.post(
        "/v1/checkpoints", content=b"raw", headers={"content-type": "application/json"}
    )
    assert not_multipart.status_code == 415
    assert not_multipart.json()["code"] == "unsupported_media_type"
