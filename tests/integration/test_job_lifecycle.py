"""The job state machine (``app/db/job_lifecycle.py``) on real PostgreSQL and on SQLite: every event
from every state, legal or not, and every event under a stale publication number.

The expected machine is written out here by hand (``EXPECTED``, ``BUMPING``), not read from the
module's table, so a wrong entry there fails a test. A job is put in each state by the module's own
events, the event under test is applied, and the row is read back from the database.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event as sa_event

from tests.integration.databases import migrate
from zootriage.app.db import job_lifecycle as lifecycle
from zootriage.app.db.job_lifecycle import EXTRACTED, Event, Outcome
from zootriage.app.db.models import Job
from zootriage.app.db.session import get_engine, session_scope

RECORD = {"cache_key": "k", "worker": "gpu-worker"}
HOLDER = "host|1|task|0"
# The states a job is put in before each event: "extracted" is queued for its marker stage.
STATES = ("queued", "running", "extracted", "succeeded", "failed", "cancelled")
# How to reach each state from a freshly created (held, never published) job.
PATHS: dict[str, tuple[Event, ...]] = {
    "queued": (Event.PUBLISH,),
    "running": (Event.PUBLISH, Event.CLAIM),
    "extracted": (Event.PUBLISH, Event.CLAIM, Event.HAND_OVER),
    "succeeded": (Event.PUBLISH, Event.CLAIM, Event.FINISH),
    "failed": (Event.PUBLISH, Event.CLAIM, Event.FAIL),
    "cancelled": (Event.PUBLISH, Event.CANCEL),
}
WAITING = ("queued", "extracted")
# (state, event) → the status the job ends in; a pair not listed is illegal.
EXPECTED: dict[tuple[str, Event], str] = {
    **{(state, Event.CLAIM): "running" for state in (*WAITING, "running")},
    ("running", Event.HAND_OVER): "queued",
    ("running", Event.SEND_BACK): "queued",
    **{(state, Event.REQUEUE): "queued" for state in (*WAITING, "running")},
    **{(state, Event.CANCEL): "cancelled" for state in (*WAITING, "running")},
    **{(state, Event.FINISH): "succeeded" for state in (*WAITING, "running")},
    **{(state, Event.FAIL): "failed" for state in (*WAITING, "running")},
}
# The events that send a new message, so the job's publication number goes up by one.
BUMPING = {Event.PUBLISH, Event.HAND_OVER, Event.SEND_BACK, Event.REQUEUE}


@pytest.fixture(scope="module")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('lifecycle') / 'jobs.db'}"
    migrate(url)
    return url


@pytest.fixture(params=["postgresql", "sqlite"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The database under test: a wiped PostgreSQL one, or the embedded default's SQLite."""
    yield request.getfixturevalue("clean_db" if request.param == "postgresql" else "sqlite_url")


def new_job(url: str) -> uuid.UUID:
    """A job row as ``app.services.jobs.create`` makes it, before it is published."""
    request = {"dataset": {"source": "folder", "path": "digits"}}
    job = Job(
        request_key=uuid.uuid4().hex, request=request, request_hash="0" * 64, **lifecycle.new_job_values()
    )
    with session_scope(url) as session:
        session.add(job)
    return job.id


def act(url: str, event: Event, job_id: uuid.UUID, publication: int | None) -> lifecycle.Transition:
    """Apply one event, in its own transaction, as its caller would."""
    with session_scope(url) as session:
        match event:
            case Event.PUBLISH:
                return lifecycle.publish(session, job_id)
            case Event.CLAIM:
                return lifecycle.claim(session, job_id, publication, None, HOLDER, same_attempt=False)
            case Event.HAND_OVER:
                return lifecycle.hand_over(session, job_id, publication, RECORD)
            case Event.SEND_BACK:
                return lifecycle.send_back(session, job_id, publication)
            case Event.REQUEUE:
                return lifecycle.requeue(session, job_id, publication)
            case Event.CANCEL:
                return lifecycle.cancel(session, job_id, publication)
            case Event.FINISH:
                return lifecycle.finish(session, job_id, None, "run-key", publication)
            case Event.FAIL:
                return lifecycle.fail(session, job_id, "boom", "it broke", publication)
    raise AssertionError(event)


def row(url: str, job_id: uuid.UUID) -> dict[str, Any]:
    with session_scope(url) as session:
        job = session.get(Job, job_id)
        assert job is not None
        return {
            "status": job.status,
            "publication": job.publication,
            "stage": job.stage,
            "attempts": job.attempts,
            "features": job.features,
            "error_code": job.error_code,
            "run_key": job.run_key,
            "finished": job.finished_at is not None,
        }


def job_in(url: str, state: str) -> uuid.UUID:
    job_id = new_job(url)
    for step in PATHS[state]:
        assert act(url, step, job_id, row(url, job_id)["publication"]).moved, (state, step)
    status = "queued" if state == "extracted" else state
    assert row(url, job_id)["status"] == status
    return job_id


@pytest.mark.parametrize("event", list(Event))
def test_every_event_from_every_state(url: str, event: Event) -> None:
    """A legal event moves the job to its state (and bumps the fence if it sends a message); an
    illegal one changes nothing and says so."""
    wrong = []
    for state in STATES:
        job_id = job_in(url, state)
        before = row(url, job_id)
        done = act(url, event, job_id, before["publication"])
        after = row(url, job_id)
        got: tuple[object, ...]
        want: tuple[object, ...]
        if (state, event) in EXPECTED:
            bump = 1 if event in BUMPING else 0
            got = (done.outcome, after["status"], after["publication"], done.publication)
            want = (Outcome.MOVED, EXPECTED[state, event], before["publication"] + bump, after["publication"])
        else:  # a published job cannot be published again, whatever its state
            got = (done.outcome, after, done.status)
            want = (Outcome.ILLEGAL, before, before["status"])
        if got != want:
            wrong.append(f"{state} + {event}: {got} != {want}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("event", [e for e in Event if e is not Event.PUBLISH])
def test_every_event_under_a_stale_publication_changes_nothing(url: str, event: Event) -> None:
    """A message of an earlier publication (or a worker whose job was taken over since its claim) moves
    nothing in any state the event could start from. (Publishing acts on no message: it is guarded by
    the job being held, below.)"""
    wrong = []
    for state in [state for state in STATES if (state, event) in EXPECTED]:
        job_id = job_in(url, state)
        before = row(url, job_id)
        for stale in (before["publication"] - 1, before["publication"] + 1):
            done = act(url, event, job_id, stale)
            if (done.outcome, done.publication, row(url, job_id)) != (
                Outcome.STALE,
                before["publication"],
                before,
            ):
                wrong.append(f"{state} + {event} under {stale}: {done}")
    assert not wrong, "\n".join(wrong)


def test_a_held_job_is_published_once_and_no_message_claims_it_before(url: str) -> None:
    job_id = new_job(url)
    assert row(url, job_id)["publication"] == 0
    assert act(url, Event.CLAIM, job_id, 1).outcome is Outcome.STALE  # no message was sent yet
    first = act(url, Event.PUBLISH, job_id, None)
    assert (first.outcome, first.publication, row(url, job_id)["status"]) == (Outcome.MOVED, 1, "queued")
    again = act(url, Event.PUBLISH, job_id, None)  # a sweep and a submit racing: it goes out once
    assert (again.outcome, row(url, job_id)["publication"]) == (Outcome.ILLEGAL, 1)
    held = new_job(url)
    assert act(url, Event.CANCEL, held, None).moved  # a sweep's cancel reaches its held jobs
    assert row(url, held)["status"] == "cancelled"
    assert act(url, Event.REQUEUE, uuid.uuid4(), 1).outcome is Outcome.MISSING


def test_what_each_move_writes(url: str) -> None:
    """The columns besides the state: attempts, the stage a job waits for, its extraction record, the
    error and the run."""
    job_id = job_in(url, "running")  # published as 1, claimed under it

    def step(event: Event, publication: int) -> dict[str, Any]:
        assert act(url, event, job_id, publication).moved, (event, publication)
        return row(url, job_id)

    assert (row(url, job_id)["attempts"], row(url, job_id)["stage"]) == (1, None)
    after = step(Event.HAND_OVER, 1)
    assert (after["stage"], after["features"], after["publication"]) == (EXTRACTED, RECORD, 2)
    after = step(Event.REQUEUE, 2)  # a queued job sent again keeps the stage it waits for
    assert (after["stage"], after["publication"]) == (EXTRACTED, 3)
    with session_scope(url) as session:  # the marker claim right after the hand-over: same attempt
        assert lifecycle.claim(session, job_id, 3, "markers", HOLDER, same_attempt=True).moved
    assert (row(url, job_id)["attempts"], row(url, job_id)["stage"]) == (1, "markers")
    after = step(Event.REQUEUE, 3)  # a lost running stage is dropped: its next claim counts
    assert (after["stage"], after["features"], after["publication"]) == (None, RECORD, 4)
    assert step(Event.CLAIM, 4)["attempts"] == 2
    after = step(Event.SEND_BACK, 4)  # the features left the cache: the record goes too
    assert (after["features"], after["stage"], after["publication"]) == (None, None, 5)
    step(Event.CLAIM, 5)
    after = step(Event.FAIL, 5)
    assert (after["error_code"], after["finished"], after["attempts"]) == ("boom", True, 3)
    finished = job_in(url, "succeeded")
    assert (row(url, finished)["run_key"], row(url, finished)["stage"]) == ("run-key", "done")


def test_no_event_uses_update_returning(sqlite_url: str) -> None:
    """SQLite before 3.35 has no UPDATE … RETURNING: every row is read back in its transaction."""
    statements: list[str] = []
    engine = get_engine(sqlite_url)
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    sa_event.listen(engine, "before_cursor_execute", listener)
    try:
        for state in STATES:
            job_in(sqlite_url, state)
    finally:
        sa_event.remove(engine, "before_cursor_execute", listener)
    assert any(sql.lstrip().upper().startswith("UPDATE") for sql in statements)
    assert not [sql for sql in statements if "RETURNING" in sql.upper()]
