"""Checkpoint uploads: accepted when core can load them, refused with the reason otherwise."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings


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
    again = client.post("/v1/checkpoints", files={"file": ("again.pt2", data)})
    assert again.status_code == 201
    assert again.json()["filename"] == "mnist.pt2"
    assert not list(settings.effective_upload_dir.glob(".upload-*"))


def test_a_state_dict_is_checked_against_its_architecture(client: TestClient, tmp_path: Path) -> None:
    import torch
    import torchvision

    state = torchvision.models.shufflenet_v2_x0_5(num_classes=10).state_dict()
    path = tmp_path / "sn.pt"
    torch.save(state, path)
    form = {"library": "torchvision", "architecture": "shufflenet_v2_x0_5"}
    ok = client.post("/v1/checkpoints", files={"file": ("sn.pt", path.read_bytes())}, data=form)
    assert ok.status_code == 201, ok.text
    assert ok.json()["architecture"] == "shufflenet_v2_x0_5"
    wrong = {"library": "torchvision", "architecture": "resnet18"}
    mismatch = client.post("/v1/checkpoints", files={"file": ("sn.pth", path.read_bytes())}, data=wrong)
    assert mismatch.status_code == 422
    assert mismatch.json()["code"] == "checkpoint_key_mismatch"


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
