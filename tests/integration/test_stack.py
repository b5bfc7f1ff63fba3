"""Jobs through the real stack: uvicorn, a Celery worker process, Redis and PostgreSQL.

The tests run in file order and build on each other's runs (one worker for the whole file keeps it
within minutes on two cores).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from tests.integration.stack import Stack
from zootriage.app.db.models import Job, Marker, Run
from zootriage.app.db.session import session_scope
from zootriage.core.markers import list_markers

TERMINAL = {"succeeded", "failed", "cancelled"}


@pytest.fixture(scope="module")
def http(stack: Stack) -> httpx.Client:
    return httpx.Client(base_url=stack.base_url, timeout=60)


@pytest.fixture(scope="module")
def model(http: httpx.Client, mnist_program: Path, database_url: str) -> dict[str, Any]:
    with session_scope(database_url) as session:  # start from an empty history
        for table in (Marker, Job, Run):
            session.execute(table.__table__.delete())
    uploaded = http.post("/v1/checkpoints", files={"file": ("mnist.pt2", mnist_program.read_bytes())})
    assert uploaded.status_code == 201, uploaded.text
    return {"source": "checkpoint", "path": uploaded.json()["model_path"]}


def job_body(model: dict[str, Any], seed: int = 0, per_class: int = 20) -> dict[str, Any]:
    return {
        "model": model,
        "dataset": {"source": "builtin", "name": "mnist"},
        "sampling": {"per_class": per_class, "split": "test"},
        "protocol": {"n_t": 100, "seed": seed},
    }


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

def wait_mid_extraction(http: httpx.Client, location: str, timeout: float = 120) -> None:
    """Wait until some batches of the job are through: mid-extraction, not at its very start."""
    deadline = time.monotonic() + timeout
    while True:
        state = http.get(location).json()
        progress = state["progress"]
        if state["status"] == "running" and progress["stage"] == "extract" and progress["done"]:
            return
        assert state["status"] in {"queued", "running"} and time.monotonic() < deadline, state
        time.sleep(0.02)



def count(database_url: str, model: type, *where: Any) -> int:
    with session_scope(database_url) as session:
        return int(session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


def test_a_job_runs_end_to_end(http: httpx.Client, model: dict[str, Any], database_url: str) -> None:
    posted = http.post("/v1/jobs", json=job_body(model))
    assert posted.status_code == 202, posted.text
    location = posted.headers["location"]
    assert location == f"/v1/jobs/{posted.json()['id']}"
    job, seen = wait(http, location)
    assert job["status"] == "succeeded", job
    assert len({stage for _, stage, _ in seen if stage}) >= 2, seen  # progress moved through stages
    run = http.get(f"/v1/runs/{job['run_id']}").json()
    assert run["weights_sha256"] == model["path"].removesuffix(".pt2")
    assert run["n_images"] == 200
    names = {spec.name for spec in list_markers()}
    assert {m["name"] for m in run["markers"]} == names
    assert count(database_url, Marker, Marker.run_id == run["id"]) == len(names)
    metrics = http.get("/metrics").text
    assert 'zootriage_jobs{status="succeeded"} 1.0' in metrics
    assert "zootriage_job_duration_seconds_count 1.0" in metrics
    assert 'route="/v1/jobs/{job_id}",status="200"' in metrics


def test_history_filters_and_pages_real_runs(http: httpx.Client, model: dict[str, Any]) -> None:
    second = http.post("/v1/jobs", json=job_body(model, seed=1))
    assert second.status_code == 202
    job, _ = wait(http, second.headers["location"])
    assert job["status"] == "succeeded"
    run = http.get(f"/v1/runs/{job['run_id']}").json()
    assert run["model_meta"]["features_cached"] is True  # same model and sample: extraction skipped
    sha = model["path"].removesuffix(".pt2")
    first_page = http.get(f"/v1/runs?weights={sha}&marker=capacity&min=0&limit=1").json()
    assert len(first_page["items"]) == 1
    second_page = http.get(
        f"/v1/runs?weights={sha}&marker=capacity&min=0&limit=1&cursor={first_page['next_cursor']}"
    )
    assert second_page.json()["next_cursor"] is None
    paged = {first_page["items"][0]["id"], second_page.json()["items"][0]["id"]}
    everything = {item["id"] for item in http.get(f"/v1/runs?weights={sha}&limit=100").json()["items"]}
    assert paged == everything
    assert job["run_id"] in paged
    assert len(paged) == 2
    assert http.get("/v1/runs?weights=" + "0" * 64).json()["items"] == []


def test_the_same_job_again_returns_the_stored_run(
    http: httpx.Client, model: dict[str, Any], database_url: str
) -> None:
    jobs_before = count(database_url, Job)
    again = http.post("/v1/jobs", json=job_body(model))
    assert again.status_code == 200
    assert count(database_url, Job) == jobs_before
    assert count(database_url, Run, Run.id == again.json()["id"]) == 1


def test_concurrent_identical_posts_make_one_run(
    http: httpx.Client, model: dict[str, Any], database_url: str
) -> None:
    body = job_body(model, seed=2)
    with ThreadPoolExecutor(20) as pool:
        responses = list(pool.map(lambda _: http.post("/v1/jobs", json=body), range(20)))
    assert {r.status_code for r in responses} <= {200, 202}
    job_ids = {r.json()["id"] for r in responses if r.status_code == 202}
    assert len(job_ids) == 1, job_ids
    job, _ = wait(http, f"/v1/jobs/{job_ids.pop()}")
    assert job["status"] == "succeeded"
    runs = http.get(f"/v1/runs?weights={model['path'].removesuffix('.pt2')}&limit=100").json()["items"]
    assert len(runs) == 3
    assert count(database_url, Job) == 3


def test_an_idempotency_key_replays_the_first_answer(http: httpx.Client, model: dict[str, Any]) -> None:
    body = job_body(model, seed=3)
    first = http.post("/v1/jobs", json=body, headers={"Idempotency-Key": "abc-1"})
    assert first.status_code == 202
    replay = http.post("/v1/jobs", json=body, headers={"Idempotency-Key": "abc-1"})
    assert replay.json()["id"] == first.json()["id"]
    misuse = http.post("/v1/jobs", json=job_body(model, seed=4), headers={"Idempotency-Key": "abc-1"})
    assert misuse.status_code == 409
    assert misuse.json()["code"] == "idempotency_key_reused"
    cancelled = http.delete(f"/v1/jobs/{first.json()['id']}")
    if cancelled.status_code == 200:
        assert cancelled.json()["status"] == "cancelled"
        job, _ = wait(http, f"/v1/jobs/{first.json()['id']}")
        assert job["status"] == "cancelled"
        assert http.delete(f"/v1/jobs/{first.json()['id']}").json()["code"] == "job_finished"
    else:  # the worker was quicker than the cancel
        assert cancelled.json()["code"] == "job_finished"


def test_a_worker_killed_mid_job_loses_nothing(
    http: httpx.Client, model: dict[str, Any], stack: Stack, database_url: str
) -> None:
    posted = http.post("/v1/jobs", json=job_body(model, seed=5, per_class=250))
    assert posted.status_code == 202
    location = posted.headers["location"]
    wait_mid_extraction(http, location)
    stack.kill_worker()
    assert http.get(location).json()["status"] == "running"  # the row still says so: nobody finished it
    stack.start_worker()
    job, seen = wait(http, location)
    assert job["status"] == "succeeded", (job, stack.worker_log_tail())
    assert job["attempts"] == 2, (job, seen, stack.worker_log_tail())
    assert count(database_url, Run, Run.id == job["run_id"]) == 1
    key = http.get(f"/v1/runs/{job['run_id']}").json()["run_key"]
    assert count(database_url, Run, Run.run_key == key) == 1


def test_bad_input_found_by_the_worker_fails_the_job_without_retry(
    http: httpx.Client, tmp_path: Path
) -> None:
    import torch
    import torchvision

    path = tmp_path / "shufflenet.pt"
    torch.save(torchvision.models.shufflenet_v2_x0_5(num_classes=10).state_dict(), path)
    uploaded = http.post("/v1/checkpoints", files={"file": ("shufflenet.pt", path.read_bytes())})
    assert uploaded.status_code == 201, uploaded.text
    wrong_architecture = {
        "source": "checkpoint",
        "path": uploaded.json()["model_path"],
        "library": "torchvision",
        "architecture": "resnet18",
    }
    posted = http.post("/v1/jobs", json=job_body(wrong_architecture))
    assert posted.status_code == 202, posted.text
    job, _ = wait(http, posted.headers["location"])
    assert job["status"] == "failed"
    assert job["error"]["code"] == "checkpoint_key_mismatch"
    assert job["attempts"] == 1
    assert job["run_id"] is None


def test_a_pool_process_killed_mid_job_is_rejected_and_rerun(
    http: httpx.Client, model: dict[str, Any], stack: Stack, database_url: str
) -> None:
    """reject_on_worker_lost: the main process hands the message back at once, no timeout to wait for."""
    posted = http.post("/v1/jobs", json=job_body(model, seed=8, per_class=240))
    location = posted.headers["location"]
    wait_mid_extraction(http, location)
    stack.kill_pool_child()
    job, seen = wait(http, location)
    assert job["status"] == "succeeded", (job, stack.worker_log_tail())
    # At least the killed attempt and the one that finished; on a loaded machine the broker's
    # visibility timeout can hand the message out once more, which must still store one run.
    assert job["attempts"] >= 2, (job, seen, stack.worker_log_tail())
    assert count(database_url, Run, Run.id == job["run_id"]) == 1
    key = http.get(f"/v1/runs/{job['run_id']}").json()["run_key"]
    assert count(database_url, Run, Run.run_key == key) == 1


def test_cancelling_a_running_job_stops_it_before_a_run_is_stored(
    http: httpx.Client, model: dict[str, Any], database_url: str
) -> None:
    posted = http.post("/v1/jobs", json=job_body(model, seed=6, per_class=160))  # a new sample: no cache
    location = posted.headers["location"]
    deadline = time.monotonic() + 120
    while (state := http.get(location).json())["progress"]["stage"] != "extract":
        assert state["status"] in {"queued", "running"} and time.monotonic() < deadline, state
        time.sleep(0.02)
    cancelled = http.delete(location)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    # The worker takes jobs one at a time: once the next one is done, it has let go of the cancelled one.
    after = http.post("/v1/jobs", json=job_body(model, seed=7))
    assert wait(http, after.headers["location"])[0]["status"] == "succeeded"
    job, _ = wait(http, location)
    assert job["status"] == "cancelled"
    assert job["run_id"] is None
    with session_scope(database_url) as session:
        key = session.scalar(select(Job.request_key).where(Job.id == posted.json()["id"]))
    assert key is not None and count(database_url, Run, Run.request_key == key) == 0
