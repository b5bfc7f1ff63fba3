"""Jobs through the real stack: uvicorn, a Celery worker process, Redis and PostgreSQL.

The stack is shared by the session; each test starts from empty tables, uploads the model and makes the
runs it asserts on, so any test runs alone and in any order. "Mid-extraction" is the worker's test
pause (worker/pause.py), closed by ``Stack.paused``: the job waits there on any hardware. Jobs whose
extraction a test needs to see use a sample size of their own, which no other test has cached.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from tests.integration.jobs import count, job_body, upload, wait, wait_held_mid_extraction
from tests.integration.stack import Stack
from zootriage.app.db.models import Job, Marker, Run
from zootriage.app.db.session import session_scope
from zootriage.app.queue import MARKERS_TASK, publish
from zootriage.app.settings import Settings
from zootriage.core.markers import list_markers
from zootriage.worker.tasks import NOT_VISIBLE_LOOKS

pytestmark = pytest.mark.slow  # real jobs through the stack


@pytest.fixture(scope="module")
def http(stack: Stack) -> httpx.Client:
    return httpx.Client(base_url=stack.base_url, timeout=60)


@pytest.fixture
def model(http: httpx.Client, mnist_program: Path, clean_db: str) -> dict[str, Any]:
    """The MNIST program uploaded to the stack, on empty tables."""
    return {"source": "checkpoint", "path": upload(http, mnist_program)}


def succeeded(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    """Post a job, wait for it, and return it, succeeded."""
    posted = http.post("/v1/jobs", json=body)
    assert posted.status_code == 202, posted.text
    job, _ = wait(http, posted.headers["location"])
    assert job["status"] == "succeeded", job
    return job


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
    first = succeeded(http, job_body(model, seed=10))
    job = succeeded(http, job_body(model, seed=11))
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
    assert paged == everything == {first["run_id"], job["run_id"]}
    assert http.get("/v1/runs?weights=" + "0" * 64).json()["items"] == []


def test_the_same_job_again_returns_the_stored_run(
    http: httpx.Client, model: dict[str, Any], database_url: str
) -> None:
    stored = succeeded(http, job_body(model, seed=12))
    again = http.post("/v1/jobs", json=job_body(model, seed=12))
    assert again.status_code == 200, again.text
    assert again.json()["id"] == stored["run_id"]
    assert count(database_url, Job) == 1
    assert count(database_url, Run) == 1


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
    assert [run["id"] for run in runs] == [job["run_id"]]
    assert count(database_url, Job) == 1


def test_an_idempotency_key_replays_the_first_answer(
    http: httpx.Client, model: dict[str, Any], stack: Stack
) -> None:
    body = job_body(model, seed=3, per_class=13)
    with stack.paused():
        first = http.post("/v1/jobs", json=body, headers={"Idempotency-Key": "abc-1"})
        assert first.status_code == 202
        replay = http.post("/v1/jobs", json=body, headers={"Idempotency-Key": "abc-1"})
        assert replay.json()["id"] == first.json()["id"]
        misuse = http.post("/v1/jobs", json=job_body(model, seed=4), headers={"Idempotency-Key": "abc-1"})
        assert misuse.status_code == 409
        assert misuse.json()["code"] == "idempotency_key_reused"
        location = f"/v1/jobs/{first.json()['id']}"
        wait_held_mid_extraction(http, location)
        cancelled = http.delete(location)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    job, _ = wait(http, location)
    assert job["status"] == "cancelled"
    assert http.delete(location).json()["code"] == "job_finished"
    stack.wait_let_go(first.json()["id"])  # its task, too, has ended (``Stack.wait_let_go``)


def test_a_worker_killed_mid_job_loses_nothing(
    http: httpx.Client, model: dict[str, Any], stack: Stack, database_url: str
) -> None:
    posted = http.post("/v1/jobs", json=job_body(model, seed=5, per_class=14))
    assert posted.status_code == 202
    location = posted.headers["location"]
    with stack.paused():
        wait_held_mid_extraction(http, location)
        stack.kill_worker()
    assert http.get(location).json()["status"] == "running"  # the row still says so: nobody finished it
    stack.start_worker()
    job, seen = wait(http, location)
    assert job["status"] == "succeeded", (job, stack.worker_log_tail())
    assert job["attempts"] == 2, (job, seen, stack.worker_log_tail())
    assert count(database_url, Run, Run.id == job["run_id"]) == 1
    key = http.get(f"/v1/runs/{job['run_id']}").json()["run_key"]
    assert count(database_url, Run, Run.run_key == key) == 1


def test_a_task_whose_job_never_shows_is_dropped_after_a_few_quick_looks(stack: Stack) -> None:
    """A stage message for a job row that does not exist (deleted, or its transaction rolled back after
    publishing) is looked for NOT_VISIBLE_LOOKS more times at sub-second to 4 s delays, then dropped.
    Before, it retried with the job backoff (up to 120 s), longer than this stack's 8 s broker
    visibility timeout: Redis restored each waiting copy, every copy retried again, and a worker spent
    whole CI runs on thousands of copies of one deleted job."""
    ghost = str(uuid.uuid4())
    own = Settings(broker_url=stack.env["ZOOTRIAGE_BROKER_URL"])
    publish(own, MARKERS_TASK, ghost, 1)
    log = stack.logs / f"worker-{stack.started_workers}.log"
    stack.wait_logged(f"job {ghost}: no such job after {NOT_VISIBLE_LOOKS + 1} looks")
    looks = NOT_VISIBLE_LOOKS + 1
    time.sleep(12)  # past the visibility timeout: a restored copy would be received again by now
    received = log.read_text(errors="replace").count(f"compute_markers[{ghost}] received")
    # Each look once; a loaded worker may start a look late enough for Redis to restore one copy.
    assert looks <= received <= 2 * looks, (received, stack.worker_log_tail())


def test_bad_input_found_by_the_worker_fails_the_job_without_retry(
    http: httpx.Client, clean_db: str, tmp_path: Path
) -> None:
    import torch
    import torchvision

    path = tmp_path / "shufflenet.pt"
    torch.save(torchvision.models.shufflenet_v2_x0_5(num_classes=10).state_dict(), path)
    wrong_architecture = {
        "source": "checkpoint",
        "path": upload(http, path),
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
    posted = http.post("/v1/jobs", json=job_body(model, seed=8, per_class=15))
    location = posted.headers["location"]
    with stack.paused():
        wait_held_mid_extraction(http, location)
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
    http: httpx.Client, model: dict[str, Any], database_url: str, stack: Stack
) -> None:
    posted = http.post("/v1/jobs", json=job_body(model, seed=6, per_class=16))  # a new sample: no cache
    location = posted.headers["location"]
    with stack.paused():
        wait_held_mid_extraction(http, location)
        cancelled = http.delete(location)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    # The worker takes jobs one at a time: once the next one is done, it has let go of the cancelled one.
    succeeded(http, job_body(model, seed=7))
    job, _ = wait(http, location)
    assert job["status"] == "cancelled"
    assert job["run_id"] is None
    with session_scope(database_url) as session:
        key = session.scalar(select(Job.request_key).where(Job.id == posted.json()["id"]))
    assert key is not None and count(database_url, Run, Run.request_key == key) == 0
