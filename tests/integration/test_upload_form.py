"""The page's upload form goes through the same service as ``POST /v1/checkpoints``
(``app.services.checkpoints.upload``): the same checks, the same stored record."""

from __future__ import annotations

import hashlib
import io

import torch
from fastapi.testclient import TestClient


def _state_dict() -> bytes:
    buffer = io.BytesIO()
    torch.save({"fc.weight": torch.zeros(2, 2)}, buffer)
    return buffer.getvalue()


def test_the_upload_form_uses_the_upload_service(client: TestClient) -> None:
    client.get("/")  # sets the page's CSRF cookie
    csrf = {"X-CSRF-Token": client.cookies["zt_csrf"]}
    content = _state_dict()
    files = {"file": ("weights.pt", content)}
    fields = {"library": "torchvision", "architecture": "resnet18"}
    forged = client.post("/ui/checkpoints", files=files, data=fields)
    assert "csrf_failed" in forged.text
    page = client.post("/ui/checkpoints", files=files, data=fields, headers=csrf)
    sha256 = hashlib.sha256(content).hexdigest()
    assert page.status_code == 200 and f'id="uploaded-path">{sha256}.pt</code>' in page.text
    again = client.post("/v1/checkpoints", files=files, data=fields)  # the same bytes: the stored record
    assert (again.status_code, again.json()["id"]) == (200, sha256)
    unknown = client.post(
        "/ui/checkpoints", files=files, data={**fields, "architecture": "resnet999"}, headers=csrf
    )
    assert "unknown_model: torchvision has no architecture &#39;resnet999&#39;" in unknown.text
    wrong_suffix = client.post("/ui/checkpoints", files={"file": ("w.txt", content)}, headers=csrf)
    assert "unsupported_format" in wrong_suffix.text
