"""Text PostgreSQL cannot store (NUL, an unpaired surrogate), numbers JSON should not carry (NaN,
Infinity) and control characters in an upload's names: each a 422 with ``{code, message}``, never a
database error (500), and nothing written. Each request here was a 500 before (an audit's findings);
the uploads' also left their file in the store with no row naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from safetensors.numpy import save
from sqlalchemy import func, select

from tests.integration.jobs import job_body
from zootriage.app.db.models import Job, Project
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings

STATE_DICT = save({"weight": np.zeros(2, dtype=np.float32)})


def _count(database_url: str, table: type[Any]) -> int:
    with session_scope(database_url) as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


def _post_json(client: TestClient, url: str, body: Any) -> Any:
    """``body`` as Python's ``json`` writes it: lone surrogates escaped, NaN as ``NaN`` (the test
    client's own encoder refuses both)."""
    return client.post(url, content=json.dumps(body), headers={"content-type": "application/json"})


def _multipart(filename: str, fields: dict[str, str]) -> tuple[bytes, str]:
    """A form with the file under its name's raw UTF-8 bytes (a client library would escape a control
    character in it; a hostile client need not)."""
    boundary = "zootriage-test-boundary"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
                 "Content-Type: application/octet-stream\r\n\r\n".encode() + STATE_DICT + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _refused(answer: Any, *words: str) -> None:
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert set(body) >= {"code", "message"}, body
    assert all(word in body["message"] for word in words), body


@pytest.mark.parametrize(
    ("model", "dataset", "where"),
    [
        ({"label_space": "digits\u0000"}, {}, "$.model.label_space"),
        ({"label_space": "\ud800"}, {}, "$.model.label_space"),  # an unpaired surrogate
        ({"penultimate_node": "fc\u0000"}, {}, "$.model.penultimate_node"),
        ({}, {"source": "folder", "path": "a\u0000b", "label_space": "x"}, "$.dataset.path"),
        ({}, {"source": "archive", "path": "x.zip", "label_space": "\udfff"}, "$.dataset.label_space"),
    ],
)
def test_a_job_whose_reference_holds_unstorable_text_is_refused(
    client: TestClient, program_ref: dict[str, Any], clean_db: str,
    model: dict[str, str], dataset: dict[str, str], where: str,
) -> None:
    body = job_body({**program_ref, **model})
    body["dataset"] = dataset or body["dataset"]
    _refused(_post_json(client, "/v1/jobs", body), "NUL", where)
    assert _count(clean_db, Job) == 0


def test_a_key_holding_nul_is_refused_and_a_surrogate_pair_is_text(client: TestClient, clean_db: str) -> None:
    _refused(_post_json(client, "/v1/projects", {"name": "p1", "description": "ok", "x\u0000": 1}), "NUL")
    _refused(_post_json(client, "/v1/projects", {"name": "p1", "description": "a\u0000b"}), "$.description")
    assert _count(clean_db, Project) == 0
    emoji = _post_json(client, "/v1/projects", {"name": "p1", "description": "cats \ud83d\ude38"})
    assert emoji.status_code == 201, emoji.text
    assert client.get("/v1/projects/p1").json()["description"] == "cats \U0001f638"


def test_nan_and_infinity_in_a_preprocessing_are_refused(
    client: TestClient, program_ref: dict[str, Any], clean_db: str
) -> None:
    preprocess = {"channels": 1, "crop": [28, 28], "resize": None, "mean": [float("nan")], "std": [1.0]}
    _refused(_post_json(client, "/v1/jobs", job_body({**program_ref, "preprocess": preprocess})), "finite")
    assert _count(clean_db, Job) == 0


def test_over_long_reference_fields_are_refused(client: TestClient, program_ref: dict[str, Any]) -> None:
    for field, length in (("penultimate_node", 257), ("label_space", 65)):
        answer = client.post("/v1/jobs", json=job_body({**program_ref, field: "a" * length}))
        assert answer.status_code == 422, (field, answer.text)


@pytest.mark.parametrize(
    ("filename", "fields", "words"),
    [
        ("m\u0000.safetensors", {"library": "torchvision", "architecture": "resnet18"}, ("file name",)),
        ("\u001b[2Jm.safetensors", {"library": "torchvision", "architecture": "resnet18"}, ("file name",)),
        ("m.safetensors", {"library": "torchvision", "architecture": "resnet18", "name": "a\u0000"},
         ("'name'",)),
        ("m.safetensors", {"library": "torchvision", "architecture": "resnet18",
                           "preprocess": '{"channels": 1, "crop": [28, 28], "resize": null, '
                                         '"mean": [NaN], "std": [Infinity]}'}, ("preprocess", "finite")),
        ("m.safetensors", {"library": "torchvision", "architecture": "resnet18", "preprocess": "[" * 3000},
         ("preprocess",)),
    ],
)
def test_an_upload_with_unstorable_fields_is_refused_and_stores_nothing(
    client: TestClient, settings: Settings, clean_db: str,
    filename: str, fields: dict[str, str], words: tuple[str, ...],
) -> None:
    stored = settings.state_dir / "uploads"
    before = sorted(stored.rglob("*")) if stored.exists() else []
    content, content_type = _multipart(filename, fields)
    answer = client.post("/v1/checkpoints", content=content, headers={"content-type": content_type})
    _refused(answer, *words)
    assert (sorted(stored.rglob("*")) if stored.exists() else []) == before


def test_a_program_whose_architecture_holds_nul_is_refused(
    client: TestClient, mnist_program: Path, settings: Settings
) -> None:
    answer = client.post("/v1/checkpoints", files={"file": ("m.pt2", mnist_program.read_bytes())},
                         data={"architecture": "net\u0000"})
    _refused(answer, "'architecture'")


def test_a_form_holding_nul_is_refused(client: TestClient) -> None:
    answer = client.post("/ui/jobs", content=b"model=tv%3Aresnet18&dataset=builtin%3Amnist%00",
                         headers={"content-type": "application/x-www-form-urlencoded"})
    _refused(answer, "NUL")


def test_an_upload_cut_before_its_closing_boundary_is_refused_and_stores_nothing(
    client: TestClient, settings: Settings
) -> None:
    """A body that ends inside (or right after) its file part may be a file cut short: it is not
    stored as if it were whole."""
    stored = settings.state_dir / "uploads"
    before = sorted(stored.rglob("*")) if stored.exists() else []
    fields = {"library": "torchvision", "architecture": "resnet18"}
    content, content_type = _multipart("m.safetensors", fields)
    whole = content.removesuffix(b"--zootriage-test-boundary--\r\n")
    for cut in (whole, whole[:-10]):
        answer = client.post("/v1/checkpoints", content=cut, headers={"content-type": content_type})
        _refused(answer, "closing boundary")
    assert (sorted(stored.rglob("*")) if stored.exists() else []) == before
    whole_body = client.post("/v1/checkpoints", content=content, headers={"content-type": content_type})
    assert whole_body.status_code == 201, whole_body.text  # the same body, whole: accepted
