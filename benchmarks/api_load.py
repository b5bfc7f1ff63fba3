"""Service speed and behaviour under load, measured in one run against real PostgreSQL and Redis on loopback.

1. History under load: ``GET /v1/runs`` (newest first, sorted by a marker, filtered by a marker range)
   with N stored runs (every registered marker each), at each client count (200 and 500 by default),
   against ``GET /healthz`` at the same count in the same run. Every answer is counted by status; a
   client told 503 waits its ``Retry-After`` as a well-behaved client does. Goals: p99 of ``/v1/runs``
   <= 10 x p99 of ``/healthz`` at 200 clients; only 2xx, or 503 with Retry-After; zero 500s, no timeouts.
2. A burst of identical ``POST /v1/jobs`` (one per client, all at once): the same goals on statuses.
3. Job overhead: one small job (ccexam's MNIST CNN, 10 x 20 MNIST test images, n_t = 100) through
   the service (POST until the job reads succeeded, warm worker) against ``zootriage score`` on the same
   job (a fresh process, as a user runs it). Goal: service <= 1.2 x command line.

Exits 1 when any 500, other unexpected status, 503 without Retry-After, or client timeout was seen.

    .venv/bin/python benchmarks/api_load.py [--runs 100000] [--clients 200 500] [--seconds 10] [--skip-job]
    .venv/bin/python benchmarks/api_load.py --runs 20000 --seconds 3 --skip-job     # a quick check
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._stack import client_pool, percentile, running_service, start_process

EXPECTED = {200, 201, 202, 503}


@dataclass
class Tally:
    """What the clients saw: statuses (``timeout``/``error`` for transport failures), 2xx latencies."""

    statuses: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    job_ids: set[str] = field(default_factory=set)

    def note(self, label: str, response: httpx.Response | BaseException, seconds: float) -> float:
        """Record one answer; returns how long the client should wait before its next request."""
        if isinstance(response, httpx.TimeoutException):
            self.statuses["timeout"] += 1
            self.problems.append(f"{label}: client timeout")
            return 0.0
        if isinstance(response, BaseException):
            self.statuses["error"] += 1
            self.problems.append(f"{label}: {type(response).__name__}: {response}")
            return 0.0
        self.statuses[str(response.status_code)] += 1
        if response.status_code not in EXPECTED:
            self.problems.append(f"{label}: {response.status_code} {response.text[:200]}")
        if response.status_code == 503:
            retry = response.headers.get("retry-after")
            if retry is None or not retry.isdigit():
                self.problems.append(f"{label}: 503 without Retry-After")
                return 1.0
            return float(retry)
        if response.status_code < 300:
            self.latencies.append(seconds)
        return 0.0


async def hammer(base_url: str, path: str, clients: int, seconds: float) -> Tally:
    """``clients`` concurrent loops requesting ``path`` for ``seconds``."""
    tally = Tally()
    async with client_pool(base_url, clients) as client:
        deadline = time.perf_counter() + seconds

        async def loop() -> None:
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                try:
                    response: httpx.Response | BaseException = await client.get(path)
                except httpx.HTTPError as exc:
                    response = exc
                await asyncio.sleep(tally.note(path, response, time.perf_counter() - start))

        await asyncio.gather(*(loop() for _ in range(clients)))
    return tally


async def burst(base_url: str, clients: int, body: dict[str, Any]) -> Tally:
    """One identical ``POST /v1/jobs`` per client, all released at once."""
    tally = Tally()
    async with client_pool(base_url, clients) as client:
        go = asyncio.Event()

        async def one() -> None:
            await go.wait()
            start = time.perf_counter()
            try:
                response: httpx.Response | BaseException = await client.post("/v1/jobs", json=body)
            except httpx.HTTPError as exc:
                response = exc
            tally.note("POST /v1/jobs", response, time.perf_counter() - start)
            if isinstance(response, httpx.Response) and response.status_code == 202:
                tally.job_ids.add(response.json()["id"])

        tasks = [asyncio.create_task(one()) for _ in range(clients)]
        await asyncio.sleep(0.1)
        go.set()
        await asyncio.gather(*tasks)
    return tally


def show_statuses(statuses: Counter[str]) -> str:
    return " ".join(f"{status}:{count}" for status, count in sorted(statuses.items()))


def load_benchmark(base_url: str, clients: int, seconds: float) -> tuple[float, list[str]]:
    """The table for one client count; returns p99(/v1/runs newest) / p99(/healthz) and the problems."""
    paths = {
        "healthz": "/healthz",
        "runs (newest)": "/v1/runs?limit=50",
        "runs (by marker)": "/v1/runs?sort=dimension&order=desc&limit=50",
        "runs (filtered)": "/v1/runs?architecture=resnet50&marker=utilization&min=0.2&max=0.4&limit=50",
    }
    asyncio.run(hammer(base_url, "/v1/runs?limit=50", clients, 2))  # warm-up: connections, caches
    print(f"\n{clients} concurrent clients, {seconds:.0f} s per endpoint (p50/p99 over 2xx answers)")
    print(f"{'endpoint':<18} {'2xx/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'p99/healthz':>12}  statuses")
    health_p99 = float("nan")
    ratios: dict[str, float] = {}
    problems: list[str] = []
    for label, path in paths.items():
        tally = asyncio.run(hammer(base_url, path, clients, seconds))
        p50, p99 = percentile(tally.latencies, 0.50) * 1000, percentile(tally.latencies, 0.99) * 1000
        if label == "healthz":
            health_p99 = p99
        ratios[label] = p99 / health_p99
        print(
            f"{label:<18} {len(tally.latencies) / seconds:>7.0f} {p50:>8.1f} {p99:>8.1f} "
            f"{ratios[label]:>11.2f}x  {show_statuses(tally.statuses)}"
        )
        problems += tally.problems
    return ratios["runs (newest)"], problems


def burst_benchmark(base_url: str, clients: int, body: dict[str, Any]) -> Tally:
    tally = asyncio.run(burst(base_url, clients, body))
    print(
        f"{clients} identical POST /v1/jobs at once: {show_statuses(tally.statuses)}; "
        f"{len(tally.job_ids)} distinct job(s) answered"
    )
    return tally


def upload_program(base_url: str, work: Path) -> dict[str, Any]:
    from tests.integration.models import export_mnist_cnn

    program = export_mnist_cnn(work)
    with httpx.Client(base_url=base_url, timeout=120) as client:
        path = client.post("/v1/checkpoints", files={"file": ("mnist.pt2", program.read_bytes())})
    return {"program": program, "model": {"source": "checkpoint", "path": path.json()["model_path"]}}


def wait_job(client: httpx.Client, location: str) -> dict:
    while True:
        job = client.get(location).json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.02)


def job_benchmark(
    base_url: str, env: dict[str, str], work: Path, repeats: int, uploaded: dict[str, Any]
) -> None:
    program, model = uploaded["program"], uploaded["model"]
    worker = start_process(
        [sys.executable, "-m", "celery", "-A", "zootriage.worker.celery_app", "worker", "--loglevel=WARNING"],
        env,
        work / "worker.log",
    )
    try:
        with httpx.Client(base_url=base_url, timeout=120) as client:

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


def burst_body(model: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": model,
        "dataset": {"source": "builtin", "name": "mnist"},
        "sampling": {"per_class": 20, "split": "test", "seed": 77},
        "protocol": {"n_t": 100, "seed": 77},
    }


def cancel(base_url: str, job_ids: set[str]) -> None:
    """The burst's job is not part of the job timing below: cancel it before a worker starts."""
    with httpx.Client(base_url=base_url, timeout=60) as client:
        for job_id in job_ids:
            client.delete(f"/v1/jobs/{job_id}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000, help="stored runs")
    parser.add_argument("--clients", type=int, nargs="+", default=[200, 500], help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=10.0, help="load per endpoint")
    parser.add_argument("--api-workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument("--job-repeats", type=int, default=3, help="jobs timed each way")
    parser.add_argument("--skip-job", action="store_true", help="only the load benchmarks")
    args = parser.parse_args()

    problems: list[str] = []
    with running_service(args.runs, port=8765, api_workers=args.api_workers) as service:
        base_url, work = service.base_url, service.work
        ratios = {}
        for clients in args.clients:
            ratios[clients], seen = load_benchmark(base_url, clients, args.seconds)
            problems += seen
        uploaded = upload_program(base_url, work)
        print()
        for clients in args.clients:
            tally = burst_benchmark(base_url, clients, burst_body(uploaded["model"]))
            problems += tally.problems
            cancel(base_url, tally.job_ids)
        print()
        for clients, ratio in ratios.items():
            verdict = "ok" if ratio <= 10 else "MISSED" if clients <= 200 else "(goal is at 200)"
            print(f"p99 runs/healthz at {clients} clients: {ratio:.2f}x (goal <= 10x) {verdict}")
        if not args.skip_job:
            job_benchmark(base_url, service.env, work, args.job_repeats, uploaded)
    shown = "\n  ".join(problems[:20])
    print(
        f"\nanswers other than 2xx or 503 + Retry-After, and client timeouts: {len(problems)}"
        + (f"\n  {shown}" if problems else "  (goal: 0)")
    )
    if problems:
        raise SystemExit(f"the API's log: {work / 'api.log'}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
