"""A second delivery of a running job's message is dropped while the claim lives, and takes the job
over once it does not (``worker/claims.py``), on real job rows in PostgreSQL."""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from tests.integration.jobs import queued_job, stored
from zootriage.app.db.models import Job
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings
from zootriage.worker.claims import ClaimToken
from zootriage.worker.runner import EXTRACT, claim


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def age_heartbeat(database_url: str, job_id: uuid.UUID, seconds: float) -> None:
    with session_scope(database_url) as session:
        stamp = datetime.now(UTC) - timedelta(seconds=seconds)
        session.execute(update(Job).where(Job.id == job_id).values(heartbeat_at=stamp))


def test_a_duplicate_delivery_of_a_live_claim_is_dropped(settings: Settings, clean_db: str) -> None:
    job = queued_job(clean_db)
    first = ClaimToken.here("task-1", 0)
    assert claim(settings, job, EXTRACT, first) is not None
    assert stored(clean_db, job).claimed_by == first.encode()
    assert claim(settings, job, EXTRACT, first) is None  # this process holds it and beats
    row = stored(clean_db, job)
    assert (row.status, row.attempts, row.claimed_by) == ("running", 1, first.encode())


def test_a_duplicate_on_another_host_is_dropped_only_while_the_heartbeat_is_fresh(
    settings: Settings, clean_db: str
) -> None:
    job = queued_job(clean_db)
    elsewhere = ClaimToken(socket.gethostname() + "-other", 1, "task-2", 0)
    assert claim(settings, job, EXTRACT, elsewhere) is not None
    again = ClaimToken.here("task-2", 0)
    assert claim(settings, job, EXTRACT, again) is None
    window = min(3 * settings.heartbeat_interval_s, settings.heartbeat_grace_s)
    age_heartbeat(clean_db, job, window + 1)
    assert claim(settings, job, EXTRACT, again) is not None  # the holder stopped beating: taken over
    assert stored(clean_db, job).attempts == 2


def test_the_message_of_a_dead_process_on_this_host_takes_the_job_over(
    settings: Settings, clean_db: str
) -> None:
    job = queued_job(clean_db)
    killed = ClaimToken(socket.gethostname(), dead_pid(), "task-3", 0)
    assert claim(settings, job, EXTRACT, killed) is not None
    assert claim(settings, job, EXTRACT, ClaimToken.here("task-3", 0)) is not None  # heartbeat fresh
    row = stored(clean_db, job)
    assert row.attempts == 2 and row.claimed_by == ClaimToken.here("task-3", 0).encode()


def test_a_retry_or_another_message_is_never_taken_for_a_duplicate(settings: Settings, clean_db: str) -> None:
    job = queued_job(clean_db)
    assert claim(settings, job, EXTRACT, ClaimToken.here("task-4", 0)) is not None
    assert claim(settings, job, EXTRACT, ClaimToken.here("task-4", 1)) is not None  # Celery's retry
    assert claim(settings, job, EXTRACT, ClaimToken.here("task-5", 0)) is not None  # the reaper's
    assert stored(clean_db, job).attempts == 3


def test_tokens_round_trip_and_malformed_ones_are_no_claim() -> None:
    token = ClaimToken("host-a", 4242, "0f1e-2d3c", 3)
    assert ClaimToken.decode(token.encode()) == token
    for text in (None, "", "a|b|c", "host|x|id|0", "host|1|id|y", "h|1|id|0|extra"):
        assert ClaimToken.decode(text) is None
