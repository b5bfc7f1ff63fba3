"""Faults on the real stack (uvicorn + Celery worker + Redis + PostgreSQL): every job still ends.

Each fault ends with the job succeeded exactly once or failed with a clear code, never stuck. The
stack here has its own Redis and database and short liveness settings (heartbeat every 0.5 s, lost
after 4 s, unclaimed after 10 s, a reaper sweep every second), and Redis' visibility timeout stays
at its long default, so it is the reaper that recovers a job, not a redelivery. "Mid-job" is made
deterministic by the worker's test-only pause (worker/pause.py): a job entering the marker stage
waits for a file.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from tests.integration.databases import migrate, scratch_database
from tests.integration.jobs import job_body, wait
from tests.integration.servers import PostgresCluster, RedisServer
from tests.integration.stack import PAUSE_FILE as RELEASE
from tests.integration.stack import PAUSE_STAGE as PAUSE
from tests.integration.stack import Stack, start_stack
from zootriage.app.db.models import Job, Run
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings
from zootriage.core.protocol import REPEATS_MAX

pytestmark = pytest.mark.slow  # workers, Redis and PostgreSQL stopped and started

LIVENESS = {
    "ZOOTRIAGE_HEARTBEAT_INTERVAL_S": "0.5",
    "ZOOTRIAGE_HEARTBEAT_GRACE_S": "4",
    "ZOOTRIAGE_QUEUE_GRACE_S": "10",
    "ZOOTRIAGE_REAPER_INTERVAL_S": "1",
    "ZOOTRIAGE_JOB_MAX_ATTEMPTS": "3",
}


def stack_settings(state: Path, database_url: str, broker_url: str) -> Settings:
    return Settings(
        state_dir=state,
        database_url=database_url,
        broker_url=broker_url,
        data_roots=[state / "data"],
        upload_limit_bytes=2 * 1024 * 1024,
    )


@pytest.fixture(scope="module")
def broker() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    yield server
    server.remove()


@pytest.fixture(scope="module")
def faulty(broker: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The API alone; each test starts (and stops) the worker it needs."""
    with scratch_database() as url:
        migrate(url)
        state = tmp_path_factory.mktemp("fault-state")
        stack = start_stack(
            stack_settings(state, url, f"{broker.url}/0"), tmp_path_factory.mktemp("fault-logs"),
            worker=False, **LIVENESS,
        )
        yield stack
        stack.stop()


def http_for(stack: Stack) -> httpx.Client:
    return httpx.Client(base_url=stack.base_url, timeout=60)


def small_job(http: httpx.Client, program: Path, seed: int) -> dict[str, Any]:
    """A quick job (100 images) on the MNIST program, uploaded to this stack (idempotent)."""
    uploaded = http.post("/v1/checkpoints", files={"file": ("mnist.pt2", program.read_bytes())})
    assert uploaded.status_code in (200, 201), uploaded.text  # 200: these bytes were uploaded before
    return job_body({"source": "checkpoint", "path": uploaded.json()["model_path"]}, seed=seed, per_class=10)


def wait_for(
    http: httpx.Client, location: str, status: str, stage: str | None = None, timeout: float = 120
) -> None:
    """Poll the job until it has ``status`` (and, if given, is in ``stage``)."""
    deadline = time.monotonic() + timeout
    while True:
        job = http.get(location).json()
        if job["status"] == status and (stage is None or job["progress"]["stage"] == stage):
            return
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def runs_with_key(database_url: str, job_id: str) -> int:
    with session_scope(database_url) as session:
        key = session.scalar(select(Job.run_key).where(Job.id == job_id))
        return int(session.scalar(select(func.count()).select_from(Run).where(Run.run_key == key)) or 0)


def finished_by_a_new_worker(stack: Stack, http: httpx.Client, location: str, attempts: int) -> None:
    """Start a worker, let it finish the job, stop it: the job succeeded after ``attempts`` claims and
    stored exactly one run."""
    stack.start_worker()
    try:
        job, _ = wait(http, location, timeout=120)
    finally:
        stack.stop_worker()
    assert job["status"] == "succeeded", job
    assert job["attempts"] == attempts, job
    assert runs_with_key(stack.env["ZOOTRIAGE_DATABASE_URL"], job["id"]) == 1


def test_a_whole_worker_killed_mid_job_is_requeued_by_the_reaper(
    faulty: Stack, mnist_program: Path, tmp_path: Path
) -> None:
    http = http_for(faulty)
    release = tmp_path / "release"
    faulty.env.update({PAUSE: "markers", RELEASE: str(release)})
    faulty.start_worker()
    faulty.wait_worker_ready()
    posted = http.post("/v1/jobs", json=small_job(http, mnist_program, seed=21))
    location = posted.headers["location"]
    wait_for(http, location, "running", stage="markers")
    time.sleep(6)  # past the 4 s grace: the heartbeat keeps a paused but living job its own
    assert http.get(location).json()["attempts"] == 1
    assert http.get(location).json()["status"] == "running"
    faulty.kill_worker()
    wait_for(http, location, "queued", timeout=30)  # no redelivery for 2 h: the reaper requeued it
    release.touch()
    finished_by_a_new_worker(faulty, http, location, attempts=2)


def test_a_job_queued_across_a_redis_restart_still_runs(
    faulty: Stack, broker: RedisServer, mnist_program: Path
) -> None:
    http = http_for(faulty)
    faulty.env.pop(PAUSE, None)
    posted = http.post("/v1/jobs", json=small_job(http, mnist_program, seed=22))
    assert posted.status_code == 202, posted.text
    location = posted.headers["location"]
    broker.stop()  # no persistence: the message is gone with it
    broker.start()
    assert http.get(location).json()["status"] == "queued"
    finished_by_a_new_worker(faulty, http, location, attempts=1)


def test_cancel_during_the_marker_stage_frees_the_worker(faulty: Stack, mnist_program: Path) -> None:
    """The most GLUE work a request may ask for (100 repeats of 20,000 draws) would keep the worker for
    minutes; the cancel check stops it within a step."""
    http = http_for(faulty)
    faulty.env.pop(PAUSE, None)
    endless = small_job(http, mnist_program, seed=23)
    endless["protocol"].update(repeats=REPEATS_MAX, n_t=20_000)
    faulty.start_worker()
    faulty.wait_worker_ready()
    try:
        posted = http.post("/v1/jobs", json=endless)
        assert posted.status_code == 202, posted.text
        location = posted.headers["location"]
        wait_for(http, location, "running", stage="markers")
        time.sleep(1)  # well inside GLUE's repeats
        cancelled = http.delete(location)
        assert cancelled.status_code == 200, cancelled.text
        after = http.post("/v1/jobs", json=small_job(http, mnist_program, seed=24))
        job, _ = wait(http, after.headers["location"], timeout=60)  # generous: a free worker takes it
    finally:
        faulty.stop_worker()
    assert job["status"] == "succeeded", job
    final = http.get(location).json()
    assert final["status"] == "cancelled" and final["run_id"] is None
    assert runs_with_key(faulty.env["ZOOTRIAGE_DATABASE_URL"], posted.json()["id"]) == 0


def test_a_database_outage_past_the_retry_budget_ends_the_job(
    broker: RedisServer, mnist_program: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The database goes away mid-job for longer than the task's retries (2, a second apart): the
    message is spent and the row says running. Once the database is back, the reaper requeues it."""
    cluster = PostgresCluster()
    cluster.start()
    release = tmp_path / "release"
    stack: Stack | None = None
    try:
        migrate(cluster.url)
        state = tmp_path_factory.mktemp("outage-state")
        stack = start_stack(
            stack_settings(state, cluster.url, f"{broker.url}/1"), tmp_path_factory.mktemp("outage-logs"),
            **LIVENESS, **{PAUSE: "markers", RELEASE: str(release)},
            ZOOTRIAGE_JOB_MAX_RETRIES="2", ZOOTRIAGE_JOB_RETRY_BACKOFF_MAX_S="1",
        )
        http = http_for(stack)
        stack.wait_worker_ready()
        posted = http.post("/v1/jobs", json=small_job(http, mnist_program, seed=25))
        location = posted.headers["location"]
        wait_for(http, location, "running", stage="markers")
        cluster.stop()
        release.touch()
        log = stack.logs / f"worker-{stack.started_workers}.log"
        deadline = time.monotonic() + 90
        while "raised unexpected: OperationalError" not in log.read_text(errors="replace"):
            assert time.monotonic() < deadline, stack.worker_log_tail()
            time.sleep(0.2)
        cluster.start()
        job, _ = wait(http, location, timeout=120)
        assert job["status"] == "succeeded", (job, stack.worker_log_tail())
        assert job["attempts"] == 2, job
        assert runs_with_key(cluster.url, job["id"]) == 1
    finally:
        if stack is not None:
            stack.stop()
        cluster.remove()
