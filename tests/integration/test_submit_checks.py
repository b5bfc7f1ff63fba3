"""Submit-time answers without opening content: hostile archives, forged cursors, idempotency, the
request key (reuse on immutable data, queueing on mutable folders), and bounded metrics labels."""

from __future__ import annotations

import base64
import json
import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torchvision
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy import func, select, update

from tests.hostile_archives import HOSTILE
from tests.integration.seeding import fake_run
from zootriage.app.db.models import Job, JobStatus, Run
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings
from zootriage.core.markers import Protocol

NO_SPLIT = {"per_class": 5}


def jobs(database_url: str) -> list[Job]:
    with session_scope(database_url) as session:
        rows = list(session.scalars(select(Job).order_by(Job.created_at)))
        session.expunge_all()
        return rows


def data_root(settings: Settings) -> Path:
    root = settings.effective_data_roots[0]
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_archives_are_4xx_at_submit(
    client: TestClient, program_ref: dict[str, Any], settings: Settings, clean_db: str, kind: str
) -> None:
    build, message = HOSTILE[kind]
    build(data_root(settings) / f"{kind}.npz")
    dataset = {"source": "archive", "path": f"{kind}.npz"}
    body = {"model": program_ref, "dataset": dataset, "sampling": NO_SPLIT}
    answer = client.post("/v1/jobs", json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["code"] == "bad_archive" and message in answer.json()["message"]
    assert jobs(clean_db) == []


def _token(value: Any) -> str:
    raw = value if isinstance(value, str) else json.dumps(value)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


FORGED = {
    "integer": _token("123"),
    "huge number": _token("1" + "0" * 400),
    "nested": _token("[" * 300 + "]" * 300),
    "infinite value": _token({"s": "dimension", "d": True, "v": 1e400, "i": str(uuid.uuid4())}),
    "huge value": _token({"s": "dimension", "d": True, "v": 10**400, "i": str(uuid.uuid4())}),
    "not base64": "%%%",
    "very long": "A" * 5000,
}


LISTS = ["/v1/runs?", "/v1/runs?sort=dimension&", "/v1/gates?", "/v1/recommendations?dataset=builtin:digits&"]


@pytest.mark.parametrize("endpoint", LISTS)
@pytest.mark.parametrize("forged", sorted(FORGED))
def test_forged_cursors_are_422_on_every_list(client: TestClient, endpoint: str, forged: str) -> None:
    answer = client.get(f"{endpoint}cursor={FORGED[forged]}")
    assert answer.status_code == 422, answer.text
    assert answer.json()["code"] in ("invalid_cursor", "invalid_request")


def _job_body(program_ref: dict[str, Any], **protocol: Any) -> dict[str, Any]:
    return {
        "model": program_ref,
        "dataset": {"source": "builtin", "name": "digits"},
        "sampling": {"per_class": 5},
        "protocol": protocol,
    }


def test_idempotency_keys(client: TestClient, program_ref: dict[str, Any], clean_db: str) -> None:
    empty = client.post("/v1/jobs", json=_job_body(program_ref), headers={"Idempotency-Key": ""})
    assert (empty.status_code, empty.json()["code"]) == (422, "invalid_request")
    blank = client.post("/v1/jobs", json=_job_body(program_ref), headers={"Idempotency-Key": "   "})
    assert blank.status_code == 422
    assert jobs(clean_db) == []
    first = client.post("/v1/jobs", json=_job_body(program_ref), headers={"Idempotency-Key": "k1"})
    assert first.status_code == 202, first.text
    defaults = Protocol()
    spelled = _job_body(program_ref, n_t=defaults.n_t, repeats=defaults.repeats, centering=defaults.centering)
    spelled["sampling"] = {"per_class": 5, "classes": None, "seed": 0}
    again = client.post("/v1/jobs", json=spelled, headers={"Idempotency-Key": "k1"})
    assert again.status_code == 202 and again.json()["id"] == first.json()["id"]
    other = client.post("/v1/jobs", json=_job_body(program_ref, n_t=999), headers={"Idempotency-Key": "k1"})
    assert (other.status_code, other.json()["code"]) == (409, "idempotency_key_reused")
    assert len(jobs(clean_db)) == 1


def _finish(database_url: str, job_id: str, run_index: int) -> uuid.UUID:
    """What the worker does: store a run under the job's request key and link the job to it."""
    with session_scope(database_url) as session:
        job = session.get(Job, uuid.UUID(job_id))
        assert job is not None and job.run_key is None  # the API computed no content identity
        run = fake_run(run_index)
        run.request_key = job.request_key
        session.add(run)
        session.flush()
        session.execute(
            update(Job)
            .where(Job.id == job.id)
            .values(status=JobStatus.succeeded.value, run_id=run.id, run_key=run.run_key)
        )
        return run.id


def test_identical_requests_share_a_job_then_its_run(
    client: TestClient, program_ref: dict[str, Any], clean_db: str
) -> None:
    first = client.post("/v1/jobs", json=_job_body(program_ref))
    second = client.post("/v1/jobs", json=_job_body(program_ref, n_t=1000))  # a default spelled out
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"]
    run_id = _finish(clean_db, first.json()["id"], 1)
    reused = client.post("/v1/jobs", json=_job_body(program_ref))  # builtin data: immutable
    assert reused.status_code == 200 and reused.json()["id"] == str(run_id)
    assert len(jobs(clean_db)) == 1


def test_a_folder_request_is_queued_again_for_the_worker_to_match(
    client: TestClient, program_ref: dict[str, Any], settings: Settings, clean_db: str
) -> None:
    for label in ("a", "b"):
        folder = data_root(settings) / "mutable" / label
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(5):
            Image.fromarray(np.full((8, 8), 40 * k, dtype=np.uint8)).save(folder / f"{k}.png")
    body = {**_job_body(program_ref), "dataset": {"source": "folder", "path": "mutable"}}
    first = client.post("/v1/jobs", json=body)
    assert first.status_code == 202, first.text
    _finish(clean_db, first.json()["id"], 2)
    again = client.post("/v1/jobs", json=body)  # the folder may have changed since: queue
    assert again.status_code == 202 and again.json()["id"] != first.json()["id"]
    keys = {job.request_key for job in jobs(clean_db)}
    assert len(keys) == 1
    with session_scope(clean_db) as session:
        assert session.scalar(select(func.count()).select_from(Run)) == 1


def test_metrics_labels_stay_bounded(client: TestClient) -> None:
    for k in range(30):
        client.request(f"BREW{k}", "/v1/runs")
    text = client.get("/metrics").text
    assert "BREW" not in text
    assert 'method="other",route="/v1/runs"' in text


def test_two_spellings_of_the_same_weights_are_one_request(
    client: TestClient, clean_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DEFAULT`` is resolved to its member at submit, from torch hub's cache entry alone (a
    placeholder file here: the API never reads it)."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    weights = torchvision.models.ResNet18_Weights.DEFAULT
    cached = tmp_path / "hub" / "checkpoints" / os.path.basename(weights.url)
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"placeholder")
    dataset = {"source": "builtin", "name": "digits"}
    unnamed = {"source": "torchvision", "arch": "resnet18"}
    default = client.post("/v1/jobs", json={"model": unnamed, "dataset": dataset})
    named = {"source": "torchvision", "arch": "resnet18", "weights": weights.name}
    explicit = client.post("/v1/jobs", json={"model": named, "dataset": dataset})
    assert default.status_code == explicit.status_code == 202, default.text
    assert default.json()["id"] == explicit.json()["id"]
    assert [job.request["model"] for job in jobs(clean_db)] == [named]
