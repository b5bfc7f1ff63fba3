"""A second delivery of a running job's message is dropped while the claim lives, and takes the job
over once it does not (``worker/claims.py``); a message of an earlier publication is dropped whatever
the job's state (``app/queue.py``). On real job rows in PostgreSQL, and in SQLite for the embedded default."""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import event, update

import zootriage.worker.runner as runner
from tests.integration.databases import migrate
from tests.integration.jobs import queued_job, stored
from zootriage.app.db.job_lifecycle import EXTRACTED
from zootriage.app.db.models import Job
from zootriage.app.db.session import get_engine, session_scope
from zootriage.app.queue import EXTRACT_TASK, MARKERS_TASK
from zootriage.app.services.sweep_queue import mark_published
from zootriage.app.settings import Settings
from zootriage.core.scoring import Extracted
from zootriage.worker.claims import ClaimToken
from zootriage.worker.runner import EXTRACT, MARKERS, claim


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


def test_a_stale_copy_of_an_earlier_stage_is_dropped_after_the_hand_over(
    settings: Settings, clean_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both stages' tasks have the job id as task id. Redis restores the extraction's message while it
    is held past the visibility timeout; the copy arrives after the hand-over, when the job waits for
    its marker stage. It must not extract again or count an attempt; the marker message must run."""
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr(runner, "publish", lambda _settings, task, _job, number: sent.append((task, number)))
    job = queued_job(clean_db)
    with session_scope(clean_db) as session:  # as the API publishes it: publication 1
        session.execute(update(Job).where(Job.id == job).values(publication=1))
    extract_delivery = ClaimToken.here(str(job), 0)
    claimed = claim(settings, job, EXTRACT, extract_delivery, 1)
    assert claimed is not None
    record = Extracted("key", "0" * 64, "fingerprint", 10, None, {}, "cpu", features_cached=False)
    runner.hand_over(settings, claimed, record, "gpu-worker")
    assert sent == [(MARKERS_TASK, 2)]
    assert claim(settings, job, EXTRACT, extract_delivery, 1) is None  # the restored copy: stale
    row = stored(clean_db, job)
    assert (row.status, row.stage, row.attempts, row.publication) == ("queued", EXTRACTED, 1, 2)

    markers_delivery = ClaimToken.here(str(job), 0)
    markers_claim = claim(settings, job, MARKERS, markers_delivery, 2)
    assert markers_claim is not None  # the marker message runs, with the record the hand-over stored
    assert (markers_claim.stage, markers_claim.publication) == (MARKERS, 2)
    assert markers_claim.features == {**record.to_dict(), "worker": "gpu-worker"}
    row = stored(clean_db, job)
    assert (row.status, row.stage, row.claimed_by) == ("running", MARKERS, markers_delivery.encode())
    assert claim(settings, job, EXTRACT, extract_delivery, 1) is None  # stale while markers run, too
    assert claim(settings, job, MARKERS, markers_delivery, 2) is None  # a live claim's duplicate
    assert stored(clean_db, job).attempts == 1  # the marker stage is the same attempt

    runner.send_back(settings, job)  # the cache lost the features: extraction again, publication 3
    assert sent[-1] == (EXTRACT_TASK, 3)
    assert claim(settings, job, MARKERS, markers_delivery, 2) is None
    assert claim(settings, job, EXTRACT, ClaimToken.here(str(job), 0), 3) is not None
    row = stored(clean_db, job)
    assert (row.status, row.attempts, row.features) == ("running", 2, None)


def test_a_message_without_a_publication_number_is_taken_as_current(
    settings: Settings, clean_db: str
) -> None:
    """Messages queued by a version before publication numbers still run after the upgrade."""
    job = queued_job(clean_db)
    assert claim(settings, job, EXTRACT, ClaimToken.here("task-6", 0), None) is not None


def test_the_publication_fence_works_on_sqlite_without_returning(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded default: the same hand-over, send-back and sweep publishing on SQLite, with no
    UPDATE … RETURNING among the statements (SQLite before 3.35 has none)."""
    url = f"sqlite:///{tmp_path / 'embedded.db'}"
    migrate(url)
    embedded = settings.model_copy(update={"database_url": url})
    statements: list[str] = []
    event.listen(get_engine(url), "before_cursor_execute", lambda *args: statements.append(args[2]))
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr(runner, "publish", lambda _settings, task, _job, number: sent.append((task, number)))
    held = queued_job(url)  # never published yet, as a job its sweep holds back
    with session_scope(url) as session:
        assert [number for _, number, _ in mark_published(session, [held])] == [1]
        assert mark_published(session, [held]) == []  # published already: not twice

    delivery = ClaimToken.here(str(held), 0)
    claimed = claim(embedded, held, EXTRACT, delivery, 1)
    assert claimed is not None
    runner.hand_over(embedded, claimed, Extracted("key", "0" * 64, "f", 10, None, {}, "cpu", False), "w")
    assert claim(embedded, held, EXTRACT, delivery, 1) is None
    assert claim(embedded, held, MARKERS, ClaimToken.here(str(held), 0), 2) is not None
    runner.send_back(embedded, held)
    assert sent == [(MARKERS_TASK, 2), (EXTRACT_TASK, 3)]
    assert stored(url, held).publication == 3
    assert not [sql for sql in statements if "RETURNING" in sql.upper()]
