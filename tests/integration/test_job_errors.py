"""Bad job requests are 4xx with ``{code, message}``; an unreachable dependency is 503, nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from zootriage.app.api_keys import create_api_key
from zootriage.app.db.models import Job
from zootriage.app.db.session import session_scope
from zootriage.app.main import create_app
from zootriage.app.settings import Settings

MNIST = {"source": "builtin", "name": "mnist"}
NO_SPLIT = {"sampling": {"per_class": 5}}
FOOLBOX = {"source": "builtin", "name": "foolbox-imagenet"}  # one image per class (two for one class)


def body(model: dict[str, Any], dataset: dict[str, Any] = MNIST, **extra: Any) -> dict[str, Any]:
    return {"model": model, "dataset": dataset, "sampling": {"per_class": 5, "split": "test"}, **extra}


def jobs_in(database_url: str) -> int:
    with session_scope(database_url) as session:
        return int(session.scalar(select(func.count()).select_from(Job)) or 0)


@pytest.mark.parametrize(
    ("model", "dataset", "extra", "status", "code"),
    [
        ({"source": "torchvision", "arch": "no_such_net"}, MNIST, {}, 404, "unknown_model"),
        ({"source": "torchvision", "arch": "resnet18", "weights": "NOPE"}, MNIST, {}, 404, "unknown_model"),
        (
            {"source": "torchvision", "arch": "resnet18", "weights": "IMAGENET1K_V1"},
            MNIST,
            {},
            404,
            "weights_not_available",
        ),
        ({"source": "timm", "name": "not_a_timm_model"}, MNIST, {}, 404, "unknown_model"),
        ({"source": "checkpoint", "path": "f" * 64 + ".pt2"}, MNIST, {}, 404, "unknown_checkpoint"),
        ({"source": "checkpoint", "path": "../../etc/passwd.pt2"}, MNIST, {}, 404, "unknown_checkpoint"),
        ({"source": "magic"}, MNIST, {}, 422, "invalid_request"),
        ("PROGRAM", {"source": "builtin", "name": "no-such-set"}, {}, 404, "unknown_dataset"),
        ("PROGRAM", {"source": "folder", "path": "../outside"}, {}, 403, "path_outside_roots"),
        ("PROGRAM", {"source": "folder", "path": "/etc"}, {}, 403, "path_outside_roots"),
        ("PROGRAM", {"source": "folder", "path": "not/there"}, {}, 404, "unknown_dataset"),
        ("PROGRAM", {"source": "folder", "path": "."}, NO_SPLIT, 403, "path_outside_roots"),
        ("PROGRAM", {"source": "torchvision", "name": "LSUN", "path": "lsun"}, {}, 404, "unknown_dataset"),
        ("PROGRAM", {"source": "archive", "path": "absent.npz"}, NO_SPLIT, 404, "unknown_dataset"),
        ("PROGRAM", MNIST, {"protocol": {"n_t": 0}}, 422, "invalid_request"),
        ("PROGRAM", MNIST, {"protocol": {"n_t": 10**12}}, 422, "invalid_request"),
        ("PROGRAM", MNIST, {"protocol": {"repeats": 10**6}}, 422, "invalid_request"),
        # 10 classes × 50 points, 10⁷ draws: about 23,000 core-seconds (core.glue_cost).
        (
            "PROGRAM",
            MNIST,
            {"sampling": {"per_class": 500, "split": "test"}, "protocol": {"n_t": 100_000, "repeats": 100}},
            422,
            "too_expensive",
        ),
        ("PROGRAM", MNIST, {"protocol": {"centering": "sideways"}}, 422, "invalid_request"),
        ("PROGRAM", MNIST, {"protocol": {"bogus": 1}}, 422, "invalid_request"),
        ("PROGRAM", MNIST, {"protocol": "fast"}, 422, "invalid_request"),
        ("PROGRAM", MNIST, {"sampling": {"per_class": 10**6, "split": "test"}}, 422, "invalid_request"),
        ("PROGRAM", MNIST, {"sampling": {"seed": 2**63}}, 422, "invalid_request"),
        ("PROGRAM", MNIST, {"sampling": {"per_class": 1000, "split": "test"}}, 422, "bad_sampling"),
        ("PROGRAM", MNIST, {"sampling": {"split": "nope"}}, 422, "bad_sampling"),
        ("PROGRAM", FOOLBOX, {"sampling": {"per_class": 2}}, 422, "bad_sampling"),
        ("PROGRAM", MNIST, {"sampling": {"classes": 1}}, 422, "invalid_request"),
    ],
)
def test_bad_requests_are_4xx_with_a_code(
    client: TestClient,
    program_ref: dict[str, Any],
    clean_db: str,
    model: Any,
    dataset: dict[str, Any],
    extra: dict[str, Any],
    status: int,
    code: str,
) -> None:
    request = body(program_ref if model == "PROGRAM" else model, dataset, **extra)
    response = client.post("/v1/jobs", json=request)
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
    assert response.json()["message"]
    assert jobs_in(clean_db) == 0


def test_malformed_json_is_422(client: TestClient) -> None:
    response = client.post("/v1/jobs", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_request"


def test_broker_down_is_503_and_leaves_no_job(
    settings: Settings, program_ref: dict[str, Any], clean_db: str
) -> None:
    broken = settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0"})
    with TestClient(create_app(broken), raise_server_exceptions=False) as client:
        response = client.post("/v1/jobs", json=body(program_ref))
    assert response.status_code == 503
    assert response.json()["code"] == "broker_unavailable"
    assert jobs_in(clean_db) == 0


def test_database_down_is_503(settings: Settings, program_ref: dict[str, Any]) -> None:
    broken = settings.model_copy(update={"database_url": "postgresql+psycopg://postgres@127.0.0.1:1/none"})
    with TestClient(create_app(broken), raise_server_exceptions=False) as client:
        response = client.post("/v1/jobs", json=body(program_ref))
    assert response.status_code == 503
    assert response.json()["code"] == "database_unavailable"


def test_writes_need_a_key_once_one_exists(client: TestClient, clean_db: str, mnist_program: Path) -> None:
    invalid = {"model": {"source": "magic"}, "dataset": MNIST}
    assert client.post("/v1/jobs", json=invalid).status_code == 422  # open while no key exists
    with session_scope(clean_db) as session:
        key = create_api_key(session, "ci").key
    refused = client.post("/v1/jobs", json=invalid)
    assert refused.status_code == 401
    assert refused.json()["code"] == "unauthorized"
    assert client.post("/v1/jobs", json=invalid, headers={"X-API-Key": "zt_wrong"}).status_code == 401
    upload = client.post("/v1/checkpoints", files={"file": ("m.pt2", mnist_program.read_bytes())})
    assert upload.status_code == 401
    assert client.post("/v1/jobs", json=invalid, headers={"X-API-Key": key}).status_code == 422
    assert client.get("/v1/runs").status_code == 200  # reads stay open


def test_key_hashes_from_settings_guard_writes(settings: Settings, clean_db: str) -> None:
    from zootriage.app.api_keys import hash_key

    guarded = settings.model_copy(update={"api_key_hashes": [hash_key("zt_from_env")]})
    invalid = {"model": {"source": "magic"}, "dataset": MNIST}
    with TestClient(create_app(guarded), raise_server_exceptions=False) as client:
        assert client.post("/v1/jobs", json=invalid).status_code == 401
        assert client.post("/v1/jobs", json=invalid, headers={"X-API-Key": "zt_from_env"}).status_code == 422


def test_the_command_stores_only_a_hash(settings: Settings, clean_db: str) -> None:
    import os
    import subprocess
    import sys

    from zootriage.app.api_keys import hash_key
    from zootriage.app.db.models import ApiKey

    env = {**os.environ, "ZOOTRIAGE_DATABASE_URL": clean_db}
    command = [str(Path(sys.executable).parent / "zootriage"), "api-keys", "create", "ci-pipeline"]
    printed = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert printed.startswith("zt_")
    with session_scope(clean_db) as session:
        stored = session.scalars(select(ApiKey)).one()
        assert (stored.name, stored.key_hash) == ("ci-pipeline", hash_key(printed))
