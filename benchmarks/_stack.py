"""The service as the load benchmarks run it (``api_load``, ``ui_load``): a scratch PostgreSQL database
holding N runs with every registered marker, a private Redis, and uvicorn on a loopback port; and the
clients' tools they share (a connection pool, percentiles).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.databases import private_redis, scratch_database  # noqa: E402
from zootriage.app.migrate import upgrade_to_head  # noqa: E402
from zootriage.core.markers import list_markers  # noqa: E402


@dataclass(frozen=True)
class Service:
    """A running service: its URL, the environment its processes share, and its state folder (kept
    after the run for its logs; the caller removes it when all went well)."""

    base_url: str
    env: dict[str, str]
    work: Path


@contextmanager
def running_service(runs: int, port: int, api_workers: int = 1) -> Iterator[Service]:
    """The service on ``port`` over a fresh database holding ``runs`` runs, stopped on leaving."""
    work = Path(tempfile.mkdtemp(prefix="zt-bench-"))
    with scratch_database() as url, private_redis() as redis_server:
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "ZOOTRIAGE_DATABASE_URL": url,
            "ZOOTRIAGE_BROKER_URL": f"{redis_server}/10",
            "ZOOTRIAGE_STATE_DIR": str(work),
        }
        upgrade_to_head(url)
        start = time.perf_counter()
        load_runs(url, runs)
        took = time.perf_counter() - start
        print(f"stored {runs} runs x {len(list_markers())} markers in {took:.0f} s")
        command = [sys.executable, "-m", "uvicorn", "zootriage.app.main:create_app", "--factory"]
        command += ["--port", str(port), "--workers", str(api_workers), "--log-level", "warning"]
        api = start_process(command, env, work / "api.log")
        try:
            base_url = f"http://127.0.0.1:{port}"
            wait_healthy(base_url, api)
            yield Service(base_url, env, work)
        finally:
            api.terminate()
            api.wait(timeout=30)


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


def client_pool(base_url: str, clients: int) -> httpx.AsyncClient:
    """A connection per client; one idle for 2 s is dropped by the client, before uvicorn closes it
    at 5 s (keep-alive): reusing one just as the server closes it is a transport error, not an answer."""
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2.0)
    return httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
