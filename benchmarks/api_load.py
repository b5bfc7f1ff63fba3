"""Service speed, as ratios measured in one run against real PostgreSQL and Redis on loopback.

1. History under load: ``GET /v1/runs`` (newest first, sorted by a marker, filtered by a marker range)
   with N stored runs (every registered marker each), at C concurrent clients, against ``GET /healthz``
   in the same run. Goal: p99 of ``/v1/runs`` < 10 × p99 of ``/healthz``.
2. Job overhead: one small job (ccexam's MNIST CNN, 10 × 20 MNIST test images, n_t = 100) through
   the service (POST until the job reads succeeded, warm worker) against ``zootriage score`` on the same
   job (a fresh process, as a user runs it). Goal: service ≤ 1.2 × command line.

    .venv/bin/python benchmarks/api_load.py [--runs 100000] [--clients 50] [--seconds 10] [--skip-job]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg
import redis
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.migrate import upgrade_to_head
from core.markers import list_markers

ADMIN_URL = os.environ.get(
    "ZOOTRIAGE_TEST_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("ZOOTRIAGE_TEST_REDIS_URL", "redis://127.0.0.1:6379") + "/10"
ROOT = Path(__file__).resolve().parent.parent


def create_database() -> str:
    name = f"zt_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    admin.dispose()


def load_runs(url: str, count: int) -> None:
    """COPY ``count`` runs with every registered marker (random values) into the database."""
    names = [spec.name for spec in list_markers()]
    rng = random.Random(0)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    run_cols = (
        "id, run_key, model_ref, architecture, weights_sha256, dataset_ref, dataset_fingerprint, sampling, "
        "protocol, model_meta, code_version, device, n_images, timings, created_at"
    )
    archs = ["resnet18", "resnet50", "vgg11", "mobilenet_v3_large", "efficientnet_b1"]
    with psycopg.connect(conninfo) as conn, conn.cursor() as cur:
        ids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(count)]
        with cur.copy(f"COPY runs ({run_cols}) FROM STDIN") as copy:
            for i, run_id in enumerate(ids):
                arch = archs[i % len(archs)]
                copy.write_row(
                    (
                        run_id,
                        hashlib.sha256(run_id.bytes).hexdigest(),
                        json.dumps({"source": "torchvision", "arch": arch, "weights": "DEFAULT"}),
                        arch,
                        hashlib.sha256(f"w{i % 500}".encode()).hexdigest(),
                        json.dumps({"source": "builtin", "name": "mnist"}),
                        hashlib.sha256(f"d{i % 7}".encode()).hexdigest(),
                        json.dumps({"per_class": 50}),
                        json.dumps({"n_t": 1000}),
                        json.dumps({}),
                        "bench",
                        "cpu",
                        500,
                        json.dumps({}),
                        start + timedelta(seconds=i),
                    )
                )
        with cur.copy(
            "COPY markers (run_id, name, value, std, applicable, reason, version) FROM STDIN"
        ) as copy:
            for run_id in ids:
                for name in names:
                    copy.write_row((run_id, name, rng.random(), None, True, None, "1"))
        conn.commit()
        cur.execute("ANALYZE")


def start_process(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT)


def wait_healthy(base_url: str, process: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        try:
            if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            raise SystemExit("the API exited; see its log")
        time.sleep(0.2)
    raise SystemExit("the API did not start")


async def hammer(base_url: str, path: str, clients: int, seconds: float) -> list[float]:
    """``clients`` concurrent loops requesting ``path`` for ``seconds``; the latency of each 200."""
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:
        deadline = time.perf_counter() + seconds

        async def loop() -> None:
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                response = await client.get(path)
                if response.status_code != 200:
                    raise SystemExit(f"{path}: {response.status_code} {response.text[:200]}")
                latencies.append(time.perf_counter() - start)

        await asyncio.gather(*(loop() for _ in range(clients)))
    return latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load_benchmark(base_url: str, clients: int, seconds: float) -> None:
    paths = {
        "healthz": "/healthz",
        "runs (newest)": "/v1/runs?limit=50",
        "runs (by marker)": "/v1/runs?sort=dimension&order=desc&limit=50",
        "runs (filtered)": "/v1/runs?architecture=resnet50&marker=utilization&min=0.2&max=0.4&limit=50",
    }
    asyncio.run(hammer(base_url, "/v1/runs?limit=50", clients, 2))  # warm-up: connections, caches
    print(f"\n{clients} concurrent clients, {seconds:.0f} s per endpoint")
    print(f"{'endpoint':<18} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'p99 / healthz':>14}")
    health_p99 = None
    for label, path in paths.items():
        lat = asyncio.run(hammer(base_url, path, clients, seconds))
        p50, p99 = percentile(lat, 0.50) * 1000, percentile(lat, 0.99) * 1000
        health_p99 = health_p99 or p99
        ratio = p99 / health_p99
        print(f"{label:<18} {len(lat):>9} {len(lat) / seconds:>8.0f} {p50:>8.1f} {p99:>8.1f} {ratio:>13.2f}x")
    print("goal: p99 of /v1/runs < 10x p99 of /healthz")


def wait_job(client: httpx.Client, location: str) -> dict:
    while True:
        job = client.get(location).json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.02)


def job_benchmark(base_url: str, env: dict[str, str], work: Path, repeats: int) -> None:
    from tests.integration.models import export_mnist_cnn

    program = export_mnist_cnn(work)
    worker = start_process(
        [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "--loglevel=WARNING"],
        env,
        work / "worker.log",
    )
    try:
        with httpx.Client(base_url=base_url, timeout=120) as client:
            model = {
                "source": "checkpoint",
                "path": client.post(
                    "/v1/checkpoints", files={"file": ("mnist.pt2", program.read_bytes())}
                ).json()["model_path"],
            }

            def body(seed: int) -> dict:
                return {
                    "model": model,
                    "dataset": {"source": "builtin", "name": "mnist"},
                    "sampling": {"per_class": 20, "split": "test", "seed": seed},
                    "protocol": {"n_t": 100, "seed": seed},
                }

            assert (
                wait_job(client, client.post("/v1/jobs", json=body(1000)).headers["location"])["status"]
                == "succeeded"
            )
            service, cli, scoring = [], [], []
            for seed in range(repeats):  # a new seed each time: a new sample, no feature-cache hit
                start = time.perf_counter()
                job = wait_job(client, client.post("/v1/jobs", json=body(seed)).headers["location"])
                service.append(time.perf_counter() - start)
                assert job["status"] == "succeeded", job
                scoring.append(sum(client.get(f"/v1/runs/{job['run_id']}").json()["timings"].values()))
                start = time.perf_counter()
                subprocess.run(
                    [
                        str(Path(sys.executable).parent / "zootriage"),
                        "score",
                        "--model",
                        f"ckpt:{program}",
                        "--dataset",
                        "builtin:mnist",
                        "--per-class",
                        "20",
                        "--split",
                        "test",
                        "--n-t",
                        "100",
                        "--seed",
                        str(seed + 500),
                        "--json",
                    ],
                    check=True,
                    capture_output=True,
                    env=env,
                )
                cli.append(time.perf_counter() - start)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    s, c, inside = statistics.median(service), statistics.median(cli), statistics.median(scoring)
    print(
        f"\none small job, median of {repeats}: service {s:.2f} s (POST to succeeded), "
        f"zootriage score {c:.2f} s (a fresh process)"
    )
    print(f"service / command line = {s / c:.2f}x   (goal <= 1.2x)")
    print(
        f"of the service's time, {inside:.2f} s is scoring inside the worker (the run's timings), "
        f"{s - inside:.2f} s queueing, validation, bookkeeping and polling"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000, help="stored runs")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=10.0, help="load per endpoint")
    parser.add_argument("--api-workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument("--job-repeats", type=int, default=3, help="jobs timed each way")
    parser.add_argument("--skip-job", action="store_true", help="only the load benchmark")
    args = parser.parse_args()

    url = create_database()
    work = Path(tempfile.mkdtemp(prefix="zt-bench-"))
    redis.Redis.from_url(REDIS_URL).flushdb()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "ZOOTRIAGE_DATABASE_URL": url,
        "ZOOTRIAGE_BROKER_URL": REDIS_URL,
        "ZOOTRIAGE_STATE_DIR": str(work),
    }
    api = None
    try:
        upgrade_to_head(url)
        start = time.perf_counter()
        load_runs(url, args.runs)
        print(
            f"stored {args.runs} runs x {len(list_markers())} markers in {time.perf_counter() - start:.0f} s"
        )
        port = 8765
        api = start_process(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "app.main:create_app",
                "--factory",
                "--port",
                str(port),
                "--workers",
                str(args.api_workers),
                "--log-level",
                "warning",
            ],
            env,
            work / "api.log",
        )
        base_url = f"http://127.0.0.1:{port}"
        wait_healthy(base_url, api)
        load_benchmark(base_url, args.clients, args.seconds)
        if not args.skip_job:
            job_benchmark(base_url, env, work, args.job_repeats)
    finally:
        if api is not None:
            api.terminate()
            api.wait(timeout=30)
        drop_database(url)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
