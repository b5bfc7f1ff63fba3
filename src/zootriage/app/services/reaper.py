"""The reaper: jobs whose worker or message was lost are requeued, or failed with a clear code.

A job can be orphaned in three ways that no worker will ever notice: its whole worker was killed
(the message comes back only after Redis' visibility timeout, hours later), the broker lost its
message (a Redis restart without persistence), or the task spent its retry budget during a database
outage (the message is acked, the row still says running). ``sweep`` is one pure pass over the
jobs table that repairs all three:

- running, no heartbeat for ``heartbeat_grace_s``: put back to queued and published again (to the
  marker stage when the job's features are in the cache, so a lost CPU worker costs no second
  extraction; ``app.queue.enqueue_score``), unless
  it already had ``job_max_attempts`` claims (``worker_lost``) or its time since the first claim
  is past ``job_time_limit_s`` (``time_limit``);
- running past ``job_time_limit_s + heartbeat_grace_s`` since its first claim, heartbeat or not:
  failed (``time_limit``), whatever its worker is doing;
- queued, unclaimed for ``queue_grace_s`` since it was last published, while no job at all has a
  fresh heartbeat: published again, since a queue cannot be inspected portably. Busy workers mean
  a backlog, not a lost message, so nothing is published then (a message lost behind a backlog is
  published once the workers fall idle). Duplicates are harmless: each republish goes out under
  a new publication number, so the old message, should it turn up after all, is dropped by ``claim``
  (``app.queue``), which also refuses finished jobs, and a stored run key is never computed twice.
  Queued past ``queue_limit_s`` since it was first published: failed (``stuck``). A job its sweep
  still holds back (never published) is not queued yet; each pass gives every such sweep
  ``sweep_queue.publish_next``, so a lost publish hook (a worker killed right after storing a run)
  costs one interval, not the sweep.

Hence the guarantee: a job is never running longer than its time limit + the heartbeat grace + one
reaper interval after its first claim, and never queued longer than the queue limit + one interval.

It runs in the API process (``run_periodically``, started by the app's lifespan every
``reaper_interval_s``): the API is the one component always deployed and it already publishes tasks,
while workers may be scaled to zero or be the very thing that died. Rows are taken with
``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so several API replicas never handle one job twice; the
embedded SQLite default has a single API process anyway. Messages are published after the commit,
so a worker never claims a row still locked here; a failed publish (the broker is away) leaves the
job queued, to be published again once its queue grace has passed.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session, aliased

from zootriage.app.db import job_lifecycle
from zootriage.app.db.models import Job, JobStatus
from zootriage.app.db.session import session_scope
from zootriage.app.services.sweep_queue import HELD, publish_stalled, send
from zootriage.app.settings import Settings

log = logging.getLogger(__name__)
BATCH = 100


@dataclass
class Sweep:
    """What one pass did, by job id."""

    requeued: list[uuid.UUID] = field(default_factory=list)
    republished: list[uuid.UUID] = field(default_factory=list)
    failed: dict[uuid.UUID, str] = field(default_factory=dict)
    published: list[uuid.UUID] = field(default_factory=list)


@dataclass
class ReaperState:
    """The last successful sweep of this process (monotonic seconds), for /readyz."""

    last_success: float | None = None
    last_error: str | None = None


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def _lost(settings: Settings, now: datetime, slack: float = 0.0) -> ColumnElement[bool]:
    """Running jobs without a heartbeat for the grace period, or past their hard deadline."""
    beat = func.coalesce(Job.heartbeat_at, Job.started_at, Job.created_at)
    first = func.coalesce(Job.started_at, Job.created_at)
    return and_(
        Job.status == JobStatus.running.value,
        or_(
            beat < now - _seconds(settings.heartbeat_grace_s + slack),
            first < now - _seconds(settings.job_time_limit_s + settings.heartbeat_grace_s + slack),
        ),
    )


def _unclaimed(settings: Settings, now: datetime, slack: float = 0.0) -> ColumnElement[bool]:
    """Queued jobs past the queue limit; and, while no job has a fresh heartbeat (a stalled queue
    rather than a backlog behind busy workers), those unclaimed for the grace period since they
    were last published."""
    other = aliased(Job)
    fresh = now - _seconds(settings.heartbeat_grace_s)
    beating = and_(other.status == JobStatus.running.value, other.heartbeat_at >= fresh)
    working = select(other.id).where(beating).exists()
    published = func.coalesce(Job.heartbeat_at, Job.published_at, Job.created_at)
    return and_(
        Job.status == JobStatus.queued.value,
        ~HELD,  # held back by its sweep: not queued yet (app.services.sweep_queue)
        or_(
            func.coalesce(Job.published_at, Job.created_at) < now - _seconds(settings.queue_limit_s + slack),
            and_(~working, published < now - _seconds(settings.queue_grace_s + slack)),
        ),
    )


def _verdict(settings: Settings, job: Job, now: datetime) -> tuple[str, str] | None:
    """``(code, message)`` when the job must fail, ``None`` when it deserves another try."""
    if job.status == JobStatus.queued.value:
        if (job.published_at or job.created_at) < now - _seconds(settings.queue_limit_s):
            return "stuck", f"no worker took this job within {settings.queue_limit_s:g} s"
        return None
    first = job.started_at or job.created_at
    if first < now - _seconds(settings.job_time_limit_s):
        return "time_limit", f"the job ran past its limit of {settings.job_time_limit_s} s"
    if job.attempts >= settings.job_max_attempts:
        return "worker_lost", f"the worker running this job stopped answering, {job.attempts} times"
    return None


def _take(session: Session, condition: ColumnElement[bool]) -> list[Job]:
    query = select(Job).where(condition).order_by(Job.created_at).limit(BATCH)
    return list(session.scalars(query.with_for_update(skip_locked=True)))


def sweep(settings: Settings, now: datetime | None = None) -> Sweep:
    """One pass: fail what is hopeless, requeue what was lost, publish again what was never claimed."""
    now = now or datetime.now(UTC)
    done = Sweep()
    to_publish: list[tuple[uuid.UUID, int, Any]] = []
    with session_scope(settings.effective_database_url) as session:
        for job in _take(session, or_(_lost(settings, now), _unclaimed(settings, now))):
            job_id, publication, was_running = job.id, job.publication, job.status == JobStatus.running.value
            verdict = _verdict(settings, job, now)
            if verdict is not None:
                if job_lifecycle.fail(session, job_id, *verdict, publication=publication, now=now).moved:
                    done.failed[job_id] = verdict[0]
                continue
            moved = job_lifecycle.requeue(session, job_id, publication, now)  # the old message is stale
            if not moved.moved or moved.publication is None:
                continue
            (done.requeued if was_running else done.republished).append(job_id)
            to_publish.append((job_id, moved.publication, moved.features))
    send(settings, to_publish)  # to the marker stage when its features are cached: no second extraction
    done.published = publish_stalled(settings)
    if done.requeued or done.republished or done.failed or done.published:
        log.warning(
            "reaper: requeued %s, published again %s, failed %s, published for their sweeps %s",
            done.requeued,
            done.republished,
            done.failed,
            done.published,
        )
    return done


def overdue(session: Session, settings: Settings) -> int:
    """Active jobs that a working reaper would already have handled (two intervals of slack)."""
    now = datetime.now(UTC)
    slack = 2 * settings.reaper_interval_s
    condition = or_(_lost(settings, now, slack), _unclaimed(settings, now, slack))
    return int(session.scalar(select(func.count()).select_from(Job).where(condition)) or 0)


async def run_periodically(settings: Settings, state: ReaperState) -> None:
    """Sweep every ``reaper_interval_s`` until cancelled; a failed sweep (database away) is logged
    and tried again at the next tick, never ends the loop."""
    while True:
        try:
            await asyncio.to_thread(sweep, settings)
        except Exception as exc:
            state.last_error = f"{type(exc).__name__}"
            log.warning("reaper: sweep failed (%s)", type(exc).__name__)
        else:
            state.last_success, state.last_error = time.monotonic(), None
        await asyncio.sleep(settings.reaper_interval_s)
