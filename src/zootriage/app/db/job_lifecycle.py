"""Every change of a job's state, and the publication fence, in one place.

A job row moves through ``queued → running → succeeded | failed | cancelled``, with two detours back
to ``queued`` (the hand-over between the extraction and the marker stage, and a stage sent back or
requeued). ``TRANSITIONS`` is the whole machine: for each event, the states it may start from and
the state it ends in. Each event is one guarded UPDATE — ``WHERE status IN (its from-states)`` and,
when the caller names the publication it acts under, ``AND publication = that number`` — so two
parties racing for one job (a worker finishing while the API cancels, the reaper requeueing while a
worker hands over) cannot overwrite each other: the loser's UPDATE matches no row and is told why.

The fence. Every message carries ``[job_id, publication]`` (``app.queue``); the events that send a
new message (``BUMPS``: publish, hand-over, send-back, requeue) increment ``jobs.publication`` in the
same UPDATE, in ``_move`` and nowhere else, so a copy of an earlier message is stale from that commit
on and ``claim`` refuses it. The row is read back after its update, in the same transaction, rather
than by UPDATE … RETURNING, which SQLite before 3.35 lacks.

Callers (the API's submit and cancel, sweeps, the reaper, the worker) decide *when* a job moves and
send messages after their commit; this module decides *whether* it may and what the row becomes.
A heartbeat or a progress report is not a transition: it touches a running row only
(``worker.heartbeat``, ``worker.progress``).
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import case, select, update
from sqlalchemy.orm import Session

from zootriage.app.db import project_queries
from zootriage.app.db.models import Job, JobStatus

QUEUED, RUNNING = JobStatus.queued.value, JobStatus.running.value
# The stage of a job queued between the two tasks: features cached, markers to do.
EXTRACTED = "extracted"


class Event(enum.StrEnum):
    PUBLISH = "publish"  # a held (or just created) job goes out to the broker
    CLAIM = "claim"  # a worker takes the job under the message's publication
    HAND_OVER = "hand_over"  # extraction done: queued for the marker stage
    SEND_BACK = "send_back"  # the features left the cache: queued for extraction again
    REQUEUE = "requeue"  # the reaper: a lost running job, or a queued one never claimed, goes out again
    CANCEL = "cancel"
    FINISH = "finish"  # a run answers the job
    FAIL = "fail"


_ACTIVE = frozenset({QUEUED, RUNNING})
TRANSITIONS: dict[Event, tuple[frozenset[str], str]] = {
    Event.PUBLISH: (frozenset({QUEUED}), QUEUED),
    Event.CLAIM: (_ACTIVE, RUNNING),  # from running: a redelivery after its holder died
    Event.HAND_OVER: (frozenset({RUNNING}), QUEUED),
    Event.SEND_BACK: (frozenset({RUNNING}), QUEUED),
    Event.REQUEUE: (_ACTIVE, QUEUED),
    Event.CANCEL: (_ACTIVE, JobStatus.cancelled.value),
    Event.FINISH: (_ACTIVE, JobStatus.succeeded.value),  # from queued: a claim found a stored run
    Event.FAIL: (_ACTIVE, JobStatus.failed.value),
}
# The events that publish a new message, so the job's earlier messages become stale.
BUMPS = frozenset({Event.PUBLISH, Event.HAND_OVER, Event.SEND_BACK, Event.REQUEUE})


class Outcome(enum.StrEnum):
    MOVED = "moved"
    STALE = "stale"  # acted under a publication that is no longer the job's
    ILLEGAL = "illegal"  # the job is in a state the event may not start from (or, to publish, out already)
    MISSING = "missing"


@dataclass(frozen=True)
class Transition:
    """What an event did: the outcome and the row as it is now (``status`` None when it is missing);
    ``publication`` is the number to send a message under when the event moved a job."""

    event: Event
    outcome: Outcome
    status: str | None = None
    publication: int | None = None
    features: dict[str, Any] | None = None

    @property
    def moved(self) -> bool:
        return self.outcome is Outcome.MOVED


def new_job_values() -> dict[str, Any]:
    """The state columns of a job row being created: queued, not yet published (``publish`` sends
    it, at once or when its sweep has room: ``app.services.sweep_queue``)."""
    return {"status": QUEUED, "published_at": None, "publication": 0}


def _move(
    session: Session,
    job_id: uuid.UUID,
    event: Event,
    values: dict[str, Any],
    publication: int | None = None,
    *extra: Any,
) -> Transition:
    """The one guarded UPDATE behind every event; ``extra`` are further WHERE conditions."""
    sources, target = TRANSITIONS[event]
    guard = [Job.id == job_id, Job.status.in_(sorted(sources)), *extra]
    if publication is not None:
        guard.append(Job.publication == publication)
    if event in BUMPS:
        values = {**values, "publication": Job.publication + 1}
    done = session.execute(
        update(Job).where(*guard).values(status=target, **values).execution_options(synchronize_session=False)
    )
    moved = bool(done.rowcount)  # type: ignore[attr-defined]
    loaded = session.identity_map.get(session.identity_key(Job, job_id))
    if moved and loaded is not None:
        session.expire(loaded)  # the UPDATE bypassed it
    row = session.execute(
        select(Job.status, Job.publication, Job.features).where(Job.id == job_id)
    ).one_or_none()
    if row is None:
        return Transition(event, Outcome.MISSING)
    if moved:
        outcome = Outcome.MOVED
    elif row.status in sources and publication is not None and row.publication != publication:
        outcome = Outcome.STALE
    else:
        outcome = Outcome.ILLEGAL
    return Transition(event, outcome, row.status, row.publication, row.features)


def publish(session: Session, job_id: uuid.UUID) -> Transition:
    """A queued job not yet published goes out under its next publication number; ILLEGAL when
    someone published it meanwhile (so it goes out once)."""
    now = datetime.now(UTC)
    return _move(
        session,
        job_id,
        Event.PUBLISH,
        {"published_at": now, "heartbeat_at": now},
        None,
        Job.published_at.is_(None),
    )


def claim(
    session: Session,
    job_id: uuid.UUID,
    publication: int | None,
    stage: str | None,
    claimed_by: str | None,
    same_attempt: bool,
) -> Transition:
    """A worker's message, published as ``publication`` (None: from before publication numbers,
    taken as current), runs the job. The progress starts over from what this task reports (``stage``);
    ``same_attempt`` (a marker claim right after the hand-over) counts no new attempt."""
    now = datetime.now(UTC)
    values = {
        "started_at": case((Job.started_at.is_(None), now), else_=Job.started_at),
        "heartbeat_at": now,
        "claimed_by": claimed_by,
        "attempts": Job.attempts + (0 if same_attempt else 1),
        "stage": stage,
        "done": 0,
        "total": 0,
        "error_code": None,
        "error_message": None,
    }
    return _move(session, job_id, Event.CLAIM, values, publication)


def hand_over(
    session: Session, job_id: uuid.UUID, publication: int | None, record: dict[str, Any]
) -> Transition:
    """Extraction done: queued for the marker stage with its extraction record."""
    values = {
        "heartbeat_at": datetime.now(UTC),
        "stage": EXTRACTED,
        "features": record,
        "done": 0,
        "total": 0,
    }
    return _move(session, job_id, Event.HAND_OVER, values, publication)


def send_back(session: Session, job_id: uuid.UUID, publication: int | None) -> Transition:
    """The features are not in the cache: queued for extraction again, the record dropped."""
    values = {"heartbeat_at": datetime.now(UTC), "stage": None, "features": None}
    return _move(session, job_id, Event.SEND_BACK, values, publication)


def requeue(
    session: Session, job_id: uuid.UUID, publication: int | None, now: datetime | None = None
) -> Transition:
    """The reaper publishes the job again. A running job lost its stage (its next claim is another
    attempt); a queued one keeps the stage it waits for (``extracted``)."""
    values = {
        "heartbeat_at": now or datetime.now(UTC),
        "stage": case((Job.status == RUNNING, None), else_=Job.stage),
    }
    return _move(session, job_id, Event.REQUEUE, values, publication)


def cancel(session: Session, job_id: uuid.UUID, publication: int | None = None) -> Transition:
    return _move(session, job_id, Event.CANCEL, {"finished_at": datetime.now(UTC)}, publication)


def finish(
    session: Session,
    job_id: uuid.UUID,
    run_id: uuid.UUID | None,
    run_key: str,
    publication: int | None = None,
    duration_s: float | None = None,
) -> Transition:
    """The job is answered by the run ``run_id`` (stored by this job or found already stored)."""
    values: dict[str, Any] = {
        "finished_at": datetime.now(UTC),
        "run_id": run_id,
        "run_key": run_key,
        "stage": "done",
    }
    if duration_s is not None:
        values["duration_s"] = duration_s
    moved = _move(session, job_id, Event.FINISH, values, publication)
    if moved.moved and run_id is not None:  # the run joins the projects that asked for it
        project_queries.join_finished_job(session, job_id, run_id)
    return moved


def fail(
    session: Session,
    job_id: uuid.UUID,
    code: str,
    message: str,
    publication: int | None = None,
    now: datetime | None = None,
) -> Transition:
    values = {"finished_at": now or datetime.now(UTC), "error_code": code[:64], "error_message": message}
    return _move(session, job_id, Event.FAIL, values, publication)
