"""Jobs on a running stack: request bodies, uploads, and polling until a job is held or finished."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from zootriage.app.db.models import Job, JobStatus
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings

TERMINAL = {"succeeded", "failed", "cancelled"}


# The smallest scoring of a sweep or job that queues nothing (the in-process API tests): MNIST,
# 4 images per class.
SWEEP_SCORING = {
    "dataset": {"source": "builtin", "name": "mnist"},
    "sampling": {"split": "test", "per_class": 4},
    "protocol": {"n_t": 20, "points_per_class": 4},
}

def job_body(model: dict[str, Any], seed: int = 0, per_class: int = 20) -> dict[str, Any]:
    """A job on MNIST's test split: ``per_class`` images of each of the 10 digits."""
    return {
        "model": model,
        "dataset": {"source": "builtin", "name": "mnist"},
        "sampling": {"per_class": per_class, "split": "test"},
        "protocol": {"n_t": 100, "seed": seed},
    }


def upload(http: httpx.Client, path: Path) -> str:
    """Upload a checkpoint file; its server-side path (201 new, 200 these bytes under this name)."""
    answer = http.post("/v1/checkpoints", files={"file": (path.name, path.read_bytes())})
    assert answer.status_code in (200, 201), answer.text
    return str(answer.json()["model_path"])


def wait(http: httpx.Client, location: str, timeout: float = 240) -> tuple[dict[str, Any], list[tuple]]:
    """Poll a job until it finishes; returns its last state and every distinct progress seen."""
    seen: list[tuple] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = http.get(location).json()
        progress = (job["status"], job["progress"]["stage"], job["progress"]["done"])
        if not seen or seen[-1] != progress:
            seen.append(progress)
        if job["status"] in TERMINAL:
            return job, seen
        time.sleep(0.05)
    raise AssertionError(f"job {location} did not finish: {seen[-5:]}")


def wait_for_jobs(
    http: httpx.Client, jobs: list[dict[str, Any]], timeout: float = 300
) -> list[dict[str, Any]]:
    """Poll several jobs until every one has finished; their last states."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [http.get(f"/v1/jobs/{job['id']}").json() for job in jobs]
        if all(state["status"] in TERMINAL for state in states):
            return states
        time.sleep(0.2)
    raise AssertionError(f"jobs did not finish: {[job['id'] for job in jobs]}")


def wait_held_mid_extraction(http: httpx.Client, location: str, timeout: float = 180) -> None:
    """Until the job reports extracted images while the worker's pause (``extract:mid``) is closed:
    from then on it waits there, whatever the hardware's speed, until the pause is released."""
    deadline = time.monotonic() + timeout
    while True:
        state = http.get(location).json()
        progress = state["progress"]
        if state["status"] == "running" and progress["stage"] == "extract" and progress["done"]:
            return
        assert state["status"] in {"queued", "running"} and time.monotonic() < deadline, state
        time.sleep(0.05)


def count(database_url: str, model: type, *where: Any) -> int:
    """Rows of ``model`` matching ``where`` in the database."""
    with session_scope(database_url) as session:
        return int(session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


def run_job(
    client: TestClient,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    model: dict[str, Any],
    **body: Any,
) -> dict[str, Any]:
    """Submit through the API and run the task in this process (the real worker code and child);
    ``body`` adds to or replaces parts of the request (a protocol, a name, ...)."""
    import zootriage.app.services.jobs as jobs
    import zootriage.worker.runner as runner
    import zootriage.worker.tasks as tasks

    sent: list[int] = []  # the publication numbers the two stages went out under
    monkeypatch.setattr(
        jobs, "enqueue_score", lambda _settings, _job_id, number, _key=None: sent.append(number)
    )
    monkeypatch.setattr(runner, "publish", lambda _settings, _task, _job_id, number: sent.append(number))
    monkeypatch.setattr(tasks, "get_settings", lambda: settings)
    request = {
        "model": model,
        "dataset": {"source": "builtin", "name": "mnist"},
        "sampling": {"per_class": 3, "split": "test"},
        **body,
    }
    submitted = client.post("/v1/jobs", json=request)
    assert submitted.status_code == 202, submitted.text
    job_id = submitted.json()["id"]
    assert tasks.extract_features.apply(args=[job_id, sent[-1]]).state == "SUCCESS"  # both stages, in turn
    assert tasks.compute_markers.apply(args=[job_id, sent[-1]]).state == "SUCCESS"
    return dict(client.get(f"/v1/jobs/{job_id}").json())


def queued_job(database_url: str) -> uuid.UUID:
    """A queued job row on a mutable folder dataset, made directly in the database (no task)."""
    request = {"dataset": {"source": "folder", "path": "digits"}}  # mutable data: never reused by request
    job = Job(
        request_key=uuid.uuid4().hex, request=request, request_hash="0" * 64, status=JobStatus.queued.value
    )
    with session_scope(database_url) as session:
        session.add(job)
    return job.id


def stored(database_url: str, job_id: uuid.UUID) -> Job:
    with session_scope(database_url) as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job
