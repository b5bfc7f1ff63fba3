"""Scale-out of a sweep: the same 16-model sweep finished by 1 worker and by 2 workers, in one run.

The stack is real and on loopback: uvicorn, a private redis-server, a scratch PostgreSQL database, and
Celery workers started with ``--concurrency 1``. The models are 16 small digit CNNs (``TinyCnn`` of
the sweep tests, seeded weights, uploaded as ``.pt2`` programs) scored on MNIST's test split (real
images, ``per_class`` of each digit). Each sweep is timed from its POST until the API reports it
finished. The 2-worker sweep runs first (colder caches: the conservative order) on sampling seed 1,
the 1-worker sweep on seed 0, so neither reuses the other's runs or cached features. With the default
``sweep_in_flight`` = 2 both workers have a job of the sweep to take at any time.

Goal: time(2 workers) / time(1 worker) <= 0.6. Each sweep also prints its jobs' mean duration and how
many ran at once, which tells a queue that did not spread (at most 1 at once) from workers that shared
too few cores (2 at once, each job slower).

    .venv/bin/python benchmarks/sweep_scaleout.py                         # the benchmark (16 models)
    .venv/bin/python benchmarks/sweep_scaleout.py --models 4 --per-class 5  # a quick check
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import MNIST_RAW, export_program  # noqa: E402
from tests.integration.databases import private_redis, scratch_database  # noqa: E402
from tests.integration.stack import free_port  # noqa: E402
from tests.integration.stacks.test_sweeps_stack import TinyCnn  # noqa: E402
from zootriage.app.migrate import upgrade_to_head  # noqa: E402


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT)


def wait_for(what: str, ready: Any, process: subprocess.Popen[bytes], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{what} did not start")
        time.sleep(0.2)


def healthy(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def start_workers(count: int, env: dict[str, str], work: Path, tag: str) -> list[subprocess.Popen[bytes]]:
    workers = []
    for i in range(count):
        log = work / f"worker-{tag}-{i}.log"
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "zootriage.worker.celery_app",
            "worker",
            "--concurrency",
            "1",
            "--loglevel=INFO",
            "-n",
            f"bench-{tag}-{i}@%h",
        ]
        worker = start(command, env, log)
        wait_for(f"worker {tag}-{i}", lambda log=log: " ready." in log.read_text(errors="replace"), worker)
        workers.append(worker)
    return workers


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def timed_sweep(http: httpx.Client, models: list[dict[str, Any]], seed: int, per_class: int) -> float:
    body = {
        "models": models,
        "dataset": {"source": "builtin", "name": "mnist"},
        "sampling": {"split": "test", "per_class": per_class, "seed": seed},
        "protocol": {"n_t": 100, "points_per_class": min(per_class, 10), "repeats": 1, "seed": seed},
    }
    began = time.perf_counter()
    created = http.post("/v1/sweeps", json=body)
    if created.status_code != 201:
        raise SystemExit(f"POST /v1/sweeps answered {created.status_code}: {created.text}")
    sweep_id = created.json()["id"]
    while True:
        sweep = http.get(f"/v1/sweeps/{sweep_id}").json()
        if sweep["status"] != "running":
            break
        time.sleep(0.2)
    took = time.perf_counter() - began
    counts = sweep["progress"]["counts"]
    if counts != {"succeeded": len(models)}:
        raise SystemExit(f"sweep {sweep_id} ended with {counts}")
    jobs = [member["job"] for member in sweep["jobs"]]
    spans = sorted(
        (datetime.fromisoformat(j["started_at"]), datetime.fromisoformat(j["finished_at"])) for j in jobs
    )
    overlap = max(sum(1 for s, f in spans if s <= start < f) for start, _ in spans)
    busy = sum((f - s).total_seconds() for s, f in spans)
    print(f"  jobs: {busy / len(jobs):.1f} s each on average, at most {overlap} running at once", flush=True)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=16, help="models in the sweep")
    parser.add_argument("--per-class", type=int, default=20, help="MNIST test images per digit")
    parser.add_argument("--keep", action="store_true", help="keep the logs folder")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="zt-sweep-bench-"))
    with scratch_database() as url, private_redis() as redis_server:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ZOOTRIAGE_")},
            "HF_HUB_OFFLINE": "1",
            "ZOOTRIAGE_DATABASE_URL": url,
            "ZOOTRIAGE_BROKER_URL": f"{redis_server}/10",
            "ZOOTRIAGE_STATE_DIR": str(work),
            "ZOOTRIAGE_UPLOAD_LIMIT_BYTES": str(16 * 1024 * 1024),
        }
        upgrade_to_head(url)
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        api = start(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "zootriage.app.main:create_app",
                "--factory",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            env,
            work / "api.log",
        )
        try:
            wait_for("the API", lambda: healthy(base_url), api)
            http = httpx.Client(base_url=base_url, timeout=120)
            models = []
            for seed in range(args.models):
                torch.manual_seed(seed)
                path = export_program(TinyCnn(), work / f"tiny{seed}.pt2", MNIST_RAW, "digits")
                answer = http.post("/v1/checkpoints", files={"file": (path.name, path.read_bytes())})
                answer.raise_for_status()
                models.append({"source": "checkpoint", "path": answer.json()["model_path"]})
            times = {}
            for workers, seed in ((2, 1), (1, 0)):
                running = start_workers(workers, env, work, f"{workers}w")
                try:
                    times[workers] = timed_sweep(http, models, seed, args.per_class)
                finally:
                    stop(running)
                print(
                    f"{args.models}-model sweep, {workers} worker(s) x concurrency 1: {times[workers]:.1f} s",
                    flush=True,
                )
        finally:
            stop([api])
    ratio = times[2] / times[1]
    verdict = "ok" if ratio <= 0.6 else "MISSED"
    print(f"2 workers / 1 worker: {ratio:.2f} (goal <= 0.6) {verdict}")
    if args.keep:
        print(f"logs: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
