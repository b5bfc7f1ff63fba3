"""Workers on several hosts: one consuming ``gpu`` (extraction), others ``cpu`` (markers), sharing only
the broker (a private Redis), the database (PostgreSQL) and an object store (moto's S3 server).

Each process has its own state, upload and cache folders, so nothing can pass through a local disk:
the upload reaches the GPU worker through the store, the features reach the CPU worker through the
store. Liveness settings are short (heartbeat lost after 4 s, a reaper sweep every second) so that a
killed CPU worker's job is requeued quickly, to the ``cpu`` queue since its features are cached.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from sqlalchemy import func, select

from tests.integration.databases import migrate, scratch_database
from tests.integration.jobs import job_body, wait_for_jobs
from tests.integration.servers import RedisServer, S3Server
from tests.integration.stack import PAUSE_FILE, PAUSE_STAGE, service_env, start_api
from zootriage.app.db.models import Job, Run
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings
from zootriage.app.storage.s3 import S3Store

pytestmark = pytest.mark.slow  # an API, three Celery workers, Redis, PostgreSQL and S3

AWS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"}
LIVENESS = {
    "ZOOTRIAGE_HEARTBEAT_INTERVAL_S": "0.5",
    "ZOOTRIAGE_HEARTBEAT_GRACE_S": "4",
    "ZOOTRIAGE_QUEUE_GRACE_S": "30",
    "ZOOTRIAGE_REAPER_INTERVAL_S": "1",
}


def host_settings(root: Path, database_url: str, broker_url: str) -> Settings:
    """One host's settings: its own state folder (and so its own upload and cache folders)."""
    return Settings(
        state_dir=root, database_url=database_url, broker_url=broker_url, data_roots=[root / "data"]
    )


@dataclass
class Worker:
    """A Celery worker process on its own "host" (folders) and queues."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while " ready." not in self.text():
            assert self.process.poll() is None and time.monotonic() < deadline, self.text()[-3000:]
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool child): nothing gets to clean up."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()


@dataclass
class Cluster:
    http: httpx.Client
    database_url: str
    broker_url: str
    store_url: str
    bucket: str
    s3_endpoint: str
    folder: Path
    workers: list[Worker]
    gpu: Worker  # the module's one ``gpu`` worker, started with the API (each start imports torch)

    def start_worker(self, name: str, queues: str, **env: str) -> Worker:
        """A worker of one test (stopped after it, ``workers``) on its own "host"."""
        worker = spawn_worker(self.folder, self.database_url, self.broker_url, self.store_url, name, queues,
                              **env)  # fmt: skip
        self.workers.append(worker)
        return worker

    def s3(self) -> S3Store:
        return S3Store(self.bucket, prefix="zoo", endpoint_url=self.s3_endpoint)


def spawn_worker(
    folder: Path, database_url: str, broker_url: str, store_url: str, name: str, queues: str, **env: str
) -> Worker:
    """``zootriage worker --queues QUEUES`` with its own state folder (the worker's "host")."""
    settings = host_settings(folder / name, database_url, broker_url)
    environment = service_env(settings, ZOOTRIAGE_STORAGE_URL=store_url, **AWS, **LIVENESS, **env)
    log = folder / f"{name}.log"
    app = "zootriage.worker.celery_app"
    # As ``zootriage worker --queues QUEUES`` runs it; the node name is the worker's identity in the run
    # (model_meta.workers).
    command = [sys.executable, "-m", "celery", "-A", app, "worker", "--loglevel=INFO", "-Q", queues]
    process = subprocess.Popen(
        [*command, "-n", f"{name}@%h"],
        env=environment,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return Worker(name, process, log)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    folder = tmp_path_factory.mktemp("scaleout")
    redis_server, s3_server = RedisServer(), S3Server()
    redis_server.start()
    s3_server.start()
    api: subprocess.Popen[bytes] | None = None
    cluster: Cluster | None = None
    gpu: Worker | None = None
    old_env = {name: os.environ.get(name) for name in AWS}
    os.environ.update(AWS)
    try:
        bucket = f"zt-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=s3_server.url).create_bucket(Bucket=bucket)
        store_url = f"s3://{bucket}/zoo?endpoint={s3_server.url}"
        with scratch_database() as url:
            migrate(url)
            broker = f"{redis_server.url}/0"
            # The GPU worker first: its imports overlap the API's start (both tests use it).
            gpu = spawn_worker(folder, url, broker, store_url, "gpu1", "gpu")
            logs = folder / "api-logs"
            logs.mkdir()
            api, base_url = start_api(
                host_settings(folder / "api", url, broker),
                logs,
                ZOOTRIAGE_STORAGE_URL=store_url,
                **AWS,
                **LIVENESS,
            )
            cluster = Cluster(
                httpx.Client(base_url=base_url, timeout=60),
                url,
                broker,
                store_url,
                bucket,
                s3_server.url,
                folder,
                [],
                gpu,
            )
            yield cluster
            for worker in cluster.workers:
                worker.stop()
            gpu.stop()
            api.terminate()
            api.wait(timeout=30)
    finally:
        if cluster is not None:
            for worker in cluster.workers:
                worker.stop()
        if gpu is not None:
            gpu.stop()
        if api is not None and api.poll() is None:
            api.kill()
        for name, value in old_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        s3_server.stop()
        redis_server.remove()


@pytest.fixture
def workers(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster, with every worker a test started stopped after it (tests run in any order)."""
    yield cluster
    for worker in cluster.workers:
        worker.stop()
    cluster.workers.clear()


def upload_program(cluster: Cluster, program: Path) -> dict[str, Any]:
    answer = cluster.http.post("/v1/checkpoints", files={"file": ("mnist.pt2", program.read_bytes())})
    assert answer.status_code in (200, 201), answer.text
    return {"source": "checkpoint", "path": answer.json()["model_path"]}


def submit(cluster: Cluster, model: dict[str, Any], seed: int) -> dict[str, Any]:
    """A small job; the sampling seed differs per job, so each has an extraction of its own."""
    body = job_body(model, seed=seed, per_class=5)
    body["sampling"]["seed"] = seed
    posted = cluster.http.post("/v1/jobs", json=body)
    assert posted.status_code == 202, posted.text
    return dict(posted.json())


def run_of(database_url: str, job_id: str) -> tuple[Job, Run, int]:
    """The job row, its run, and how many runs carry its run key."""
    with session_scope(database_url) as session:
        job = session.get(Job, uuid.UUID(job_id))
        assert job is not None and job.run_id is not None
        run = session.get(Run, job.run_id)
        assert run is not None
        count = session.scalar(select(func.count()).select_from(Run).where(Run.run_key == job.run_key))
        session.expunge_all()
        return job, run, int(count or 0)


def files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_jobs_are_extracted_on_the_gpu_queue_and_scored_on_the_cpu_queue(
    workers: Cluster, mnist_program: Path
) -> None:
    """An upload through the API reaches the GPU worker through the store alone (its upload folder is
    not the API's); each job is extracted there and scored by the CPU worker, once."""
    cluster, gpu = workers, workers.gpu
    cpu = cluster.start_worker("cpu1", "cpu")
    gpu.wait_ready()
    cpu.wait_ready()
    model = upload_program(cluster, mnist_program)
    sha = model["path"].partition(".")[0]
    assert [key for key in cluster.s3().keys("uploads") if sha in key]  # the upload is in the store
    jobs = [submit(cluster, model, seed) for seed in (31, 32, 33)]
    try:
        states = wait_for_jobs(cluster.http, jobs, timeout=300)
    finally:
        cpu.stop()
    for state in states:
        assert state["status"] == "succeeded", (state, gpu.text()[-2000:], cpu.text()[-2000:])
        assert state["attempts"] == 1, state
        job, run, runs = run_of(cluster.database_url, state["id"])
        assert runs == 1
        assert run.model_meta["workers"]["extract"].startswith("gpu1@"), run.model_meta
        assert run.model_meta["workers"]["markers"].startswith("cpu1@"), run.model_meta
        assert job.features is not None and job.features["worker"].startswith("gpu1@")
        assert "child" in run.timings and "read_features" in run.timings  # extracted, then read back
    assert len(cluster.s3().keys("features")) >= len(jobs)
    # Each stage ran on its queue's worker only.
    assert "Received task: zootriage.compute_markers" not in gpu.text()
    assert "Received task: zootriage.extract_features" not in cpu.text()
    # The extraction worker started its warm sandboxed child when it started (worker.warm.start_early),
    # before its first job arrived (whether the child was ready by then depends on the machine's load);
    # the markers worker, which never extracts, started none.
    first_job = gpu.text().index("zootriage.extract_features[")
    assert -1 < gpu.text().find("warm children at the process's start") < first_job, gpu.text()[-3000:]
    assert "warm child ready" in gpu.text()
    assert "warm child" not in cpu.text()
    # Neither worker keeps a copy of the upload: downloads are temporary, the store is the only home.
    assert not [p for p in files_under(cluster.folder / "gpu1") if sha in p.name]
    assert not files_under(cluster.folder / "api" / "uploads")


def test_a_killed_markers_worker_resumes_from_cached_features_on_another(
    workers: Cluster, mnist_program: Path, tmp_path: Path
) -> None:
    """The CPU worker is SIGKILLed while it computes the markers; the reaper requeues the job to the
    ``cpu`` queue (its features are cached) and a second CPU worker finishes it, with no second
    extraction."""
    cluster, release, gpu = workers, tmp_path / "release", workers.gpu
    doomed = cluster.start_worker("cpu2", "cpu", **{PAUSE_STAGE: "markers", PAUSE_FILE: str(release)})
    gpu.wait_ready()
    doomed.wait_ready()
    model = upload_program(cluster, mnist_program)
    job = submit(cluster, model, seed=41)
    location = f"/v1/jobs/{job['id']}"
    deadline = time.monotonic() + 180
    while True:
        state = cluster.http.get(location).json()
        if state["status"] == "running" and state["progress"]["stage"] == "markers":
            break
        assert state["status"] in {"queued", "running"} and time.monotonic() < deadline, state
        time.sleep(0.05)
    doomed.kill()
    release.touch()  # a new worker must not wait at the pause
    rescuer = cluster.start_worker("cpu3", "cpu")
    try:
        rescuer.wait_ready()
        (final,) = wait_for_jobs(cluster.http, [job], timeout=180)
    finally:
        rescuer.stop()
    assert final["status"] == "succeeded", (final, rescuer.text()[-2000:])
    assert final["attempts"] == 2, final  # the extraction's claim, and the markers claim after the loss
    row, run, runs = run_of(cluster.database_url, job["id"])
    assert runs == 1
    assert run.model_meta["workers"]["markers"].startswith("cpu3@"), run.model_meta
    assert run.model_meta["workers"]["extract"] == row.features["worker"]  # type: ignore[index]
    assert row.features["worker"].startswith(gpu.name + "@")  # type: ignore[index]
    extractions = gpu.text().count(f"zootriage.extract_features[{job['id']}] succeeded")
    assert extractions == 1, gpu.text()[-3000:]  # extracted once: the rescue read the cached features
