"""A burst of clients against the real server (uvicorn, PostgreSQL, Redis): saturation is a 503 with
Retry-After, never a 500 or a hung client. Only outcomes are asserted, never times."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import func, select, text

from tests.integration.seeding import seed_runs
from tests.integration.stack import start_api
from zootriage.app.db.models import Job
from zootriage.app.db.session import POOL_CAPACITY, get_engine, session_scope
from zootriage.app.main import create_app
from zootriage.app.settings import Settings

CLIENTS = 300


async def burst(base_url: str, job: dict[str, Any], saturated: Callable[[], None]) -> list[httpx.Response]:
    """Every client at once: half list the history, half post the same job; each request once.
    ``saturated`` is called when the first 503 arrives (or once every client has its answer)."""
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=120) as client:
        ready = asyncio.Event()

        async def one(i: int) -> httpx.Response:
            await ready.wait()
            if i % 2:
                return await client.post("/v1/jobs", json=job)
            return await client.get("/v1/runs?sort=dimension&limit=50")

        tasks = [asyncio.create_task(one(i)) for i in range(CLIENTS)]
        await asyncio.sleep(0)
        ready.set()
        pending: set[asyncio.Task[httpx.Response]] = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if any(task.result().status_code == 503 for task in done):
                break
        saturated()
        return await asyncio.gather(*tasks)


@contextmanager
def runs_locked(database_url: str) -> Iterator[Callable[[], None]]:
    """Hold the runs table locked, so that every request that reads it keeps its database slot until
    the returned ``release`` is called: the service is saturated for certain, however fast it is."""
    engine = get_engine(database_url)
    with engine.connect() as blocker:
        transaction = blocker.begin()
        blocker.execute(text("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE"))
        try:
            yield transaction.rollback
        finally:
            if transaction.is_active:
                transaction.rollback()


def test_a_burst_of_clients_gets_2xx_or_503_with_retry_after_and_no_500(
    settings: Settings, clean_db: str, redis_server: str, mnist_program: Path, tmp_path: Path
) -> None:
    with session_scope(clean_db) as session:
        seed_runs(session, 200)
    # A short wait for a database slot, with the slots held (``runs_locked``), makes this burst take
    # the saturated path (503); its own broker database (13: the triage stack's is 9) keeps the queued
    # job away from other tests' workers.
    api, base_url = start_api(
        settings, tmp_path, ZOOTRIAGE_BROKER_URL=f"{redis_server}/13", ZOOTRIAGE_DB_SLOT_WAIT_S="0.05"
    )
    try:
        upload = httpx.post(
            f"{base_url}/v1/checkpoints", files={"file": ("m.pt2", mnist_program.read_bytes())}, timeout=60
        )
        assert upload.status_code in (200, 201), upload.text
        job = {
            "model": {"source": "checkpoint", "path": upload.json()["model_path"]},
            "dataset": {"source": "builtin", "name": "mnist"},
            "sampling": {"per_class": 5, "split": "test"},
        }
        with runs_locked(clean_db) as release:
            responses = asyncio.run(burst(base_url, job, release))
    finally:
        api.terminate()
        api.wait(timeout=30)

    statuses = Counter(r.status_code for r in responses)
    assert set(statuses) <= {200, 202, 503}, (statuses, (tmp_path / "api.log").read_text()[-3000:])
    assert statuses[503] > 0 and statuses[200] + statuses[202] > 0, statuses  # saturated, still serving
    for response in responses:
        if response.status_code == 503:
            assert response.headers["retry-after"] == "1"
            assert response.json()["code"] == "overloaded"
            assert response.json()["request_id"] == response.headers["x-request-id"]
    accepted = {r.json()["id"] for r in responses if r.request.method == "POST" and r.status_code == 202}
    with session_scope(clean_db) as session:
        jobs = session.scalar(select(func.count()).select_from(Job))
    assert len(accepted) == jobs  # identical posts collapse into the one job they all answer with
    assert jobs <= 1


def test_an_exhausted_connection_pool_is_a_503_with_retry_after(settings: Settings, clean_db: str) -> None:
    """The limiter normally keeps requests out of the pool's queue; should the pool still run dry
    (connections held elsewhere in the process), the wait ends as a 503, not a 500."""
    engine = get_engine(settings.effective_database_url)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client, ExitStack() as held:
        for _ in range(POOL_CAPACITY):
            held.enter_context(engine.connect())
        answer = client.get("/v1/runs")
    assert answer.status_code == 503, answer.text
    assert (answer.json()["code"], answer.headers["retry-after"]) == ("overloaded", "1")
