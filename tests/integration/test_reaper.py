"""The reaper's sweep over real PostgreSQL rows, publishing to a real Redis; /readyz reports overdue jobs."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import update

from tests.integration.databases import migrate, scratch_database
from zootriage.app.db.models import Job, JobStatus
from zootriage.app.db.session import session_scope
from zootriage.app.main import create_app
from zootriage.app.queue import GPU_QUEUE
from zootriage.app.services.reaper import sweep
from zootriage.app.settings import Settings

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def reaping(settings: Settings, redis_server: str) -> Iterator[Settings]:
    """Settings with short limits on a database and a Redis database of this test alone: no other
    test's reaper (an API of the session's stack) sweeps these rows or reads these messages."""
    broker = f"{redis_server}/11"
    with scratch_database() as url:
        migrate(url)
        yield settings.model_copy(
            update={
                "database_url": url,
                "broker_url": broker,
                "heartbeat_grace_s": 60,
                "queue_grace_s": 300,
                "queue_limit_s": 3600,
                "job_time_limit_s": 600,
                "job_max_attempts": 3,
            }
        )
        redis.Redis.from_url(broker).delete(GPU_QUEUE)


def add_job(
    database_url: str, status: JobStatus, ago: float, beat_ago: float | None, attempts: int
) -> uuid.UUID:
    """A job created (and first claimed) ``ago`` seconds before NOW, its heartbeat ``beat_ago`` before."""
    job = Job(
        request_key=uuid.uuid4().hex,
        request={},
        request_hash="0" * 64,
        status=status.value,
        attempts=attempts,
        created_at=NOW - timedelta(seconds=ago),
        started_at=NOW - timedelta(seconds=ago) if status == JobStatus.running else None,
        heartbeat_at=None if beat_ago is None else NOW - timedelta(seconds=beat_ago),
    )
    with session_scope(database_url) as session:
        session.add(job)
    return job.id


def published(broker: str) -> list[tuple[str, int]]:
    """(task id, publication number) of each message waiting in the ``gpu`` queue."""
    messages = [json.loads(raw) for raw in redis.Redis.from_url(broker).lrange(GPU_QUEUE, 0, -1)]
    bodies = [json.loads(base64.b64decode(message["body"])) for message in messages]
    return [(message["headers"]["id"], body[0][1]) for message, body in zip(messages, bodies, strict=True)]


def row(database_url: str, job_id: uuid.UUID) -> Job:
    with session_scope(database_url) as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job


def test_lost_jobs_are_requeued_or_failed_and_live_ones_left_alone(reaping: Settings) -> None:
    url = reaping.effective_database_url
    alive = add_job(url, JobStatus.running, ago=300, beat_ago=5, attempts=1)
    lost = add_job(url, JobStatus.running, ago=300, beat_ago=90, attempts=1)
    lost_again = add_job(url, JobStatus.running, ago=300, beat_ago=90, attempts=3)
    too_long = add_job(url, JobStatus.running, ago=700, beat_ago=1, attempts=1)
    abandoned = add_job(url, JobStatus.queued, ago=4000, beat_ago=400, attempts=0)
    finished = add_job(url, JobStatus.succeeded, ago=5000, beat_ago=5000, attempts=1)

    done = sweep(reaping, now=NOW)

    assert done.requeued == [lost]
    assert done.republished == []
    assert done.failed == {lost_again: "worker_lost", too_long: "time_limit", abandoned: "stuck"}
    assert published(reaping.effective_broker_url) == [(str(lost), 1)]  # a new publication number
    requeued = row(url, lost)
    assert requeued.status == "queued" and requeued.heartbeat_at == NOW and requeued.stage is None
    for job_id, code in done.failed.items():
        failed = row(url, job_id)
        assert (failed.status, failed.error_code, failed.finished_at) == ("failed", code, NOW)
        assert failed.error_message and "/" not in failed.error_message
    assert row(url, alive).status == "running"
    assert row(url, finished).status == "succeeded"
    again = sweep(reaping, now=NOW + timedelta(seconds=1))  # just published: nothing to do twice
    assert (again.requeued, again.republished, again.failed) == ([], [], {})


def test_unclaimed_jobs_are_published_again_only_when_no_worker_is_busy(reaping: Settings) -> None:
    """Jobs waiting behind a working worker are a backlog; with no heartbeat anywhere, the queue has
    stalled and their messages may be lost."""
    url = reaping.effective_database_url
    busy = add_job(url, JobStatus.running, ago=100, beat_ago=5, attempts=1)
    waiting = add_job(url, JobStatus.queued, ago=100, beat_ago=None, attempts=0)
    forgotten = add_job(url, JobStatus.queued, ago=400, beat_ago=None, attempts=0)
    assert sweep(reaping, now=NOW).republished == []
    with session_scope(url) as session:
        session.execute(update(Job).where(Job.id == busy).values(status=JobStatus.succeeded.value))
    assert sweep(reaping, now=NOW).republished == [forgotten]
    assert published(reaping.effective_broker_url) == [(str(forgotten), 1)]
    assert row(url, waiting).status == "queued" and row(url, waiting).heartbeat_at is None
    assert row(url, forgotten).heartbeat_at == NOW


def test_a_sweep_with_the_broker_down_keeps_the_job_queued_for_the_next(reaping: Settings) -> None:
    url = reaping.effective_database_url
    lost = add_job(url, JobStatus.running, ago=300, beat_ago=90, attempts=1)
    unreachable = reaping.model_copy(update={"broker_url": "redis://127.0.0.1:1/0", "broker_timeout_s": 0.5})
    assert sweep(unreachable, now=NOW).requeued == [lost]
    assert row(url, lost).status == "queued"
    later = NOW + timedelta(seconds=reaping.queue_grace_s + 1)
    assert sweep(reaping, now=later).republished == [lost]
    assert published(reaping.effective_broker_url) == [(str(lost), 2)]  # the unsent 1 is stale


def test_readyz_reports_overdue_jobs(reaping: Settings) -> None:
    quiet = reaping.model_copy(update={"reaper_interval_s": 3600})  # one sweep at start-up, then none
    with TestClient(create_app(quiet), raise_server_exceptions=False) as client:
        deadline = time.monotonic() + 30
        while client.app.state.reaper.last_success is None:  # type: ignore[attr-defined]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert client.get("/readyz").json()["overdue_jobs"] == 0
        now = datetime.now(UTC)
        with session_scope(quiet.effective_database_url) as session:
            session.add(
                Job(
                    request_key=uuid.uuid4().hex,
                    request={},
                    request_hash="0" * 64,
                    status="running",
                    attempts=1,
                    created_at=now - timedelta(hours=3),
                    started_at=now - timedelta(hours=3),
                    heartbeat_at=now - timedelta(hours=3),
                )
            )
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["overdue_jobs"] == 1
        assert ready.json()["reaper"] == "ok" and ready.json()["database"] == "ok"
