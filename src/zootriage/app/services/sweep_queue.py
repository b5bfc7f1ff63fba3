"""Fair interleaving: a sweep publishes at most ``settings.sweep_in_flight`` of its jobs at a time.

A sweep creates all its jobs at once but holds them back (``jobs.published_at`` is None). Publishing
them all would put N tasks in the FIFO queue ahead of any job another user submits a second later; with
at most k in flight, a job submitted meanwhile waits behind at most k of the sweep's tasks, and the
sweep's next task is queued behind it.

``publish_next`` is the one place that decides: it locks the sweep's row (so two workers finishing two
of its jobs at once count in turn), counts the sweep's published jobs still queued or running, and
publishes the oldest held ones until there are k. It is called wherever a job of a sweep may have
reached a final state: after every task in the worker (``worker.tasks``), after a cancel through the
API, and from every reaper pass (``publish_stalled``), which repairs a hook that was lost (a worker
killed between storing its run and publishing the next, a broker away at that moment). Tasks are sent
after the commit, as the reaper does: a failed send leaves a published, unclaimed job that the
reaper's queue grace publishes again.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from zootriage.app.db import job_lifecycle
from zootriage.app.db.models import ACTIVE_STATUSES, Job, JobStatus, Sweep
from zootriage.app.db.session import session_scope
from zootriage.app.queue import enqueue_score
from zootriage.app.settings import Settings

log = logging.getLogger(__name__)
_ACTIVE = [s.value for s in ACTIVE_STATUSES]
# A job its sweep holds back: queued in the table, not yet in the broker's queue. (Jobs from before
# sweeps have no publish time but were published when created.)
HELD = and_(Job.sweep_id.is_not(None), Job.published_at.is_(None), Job.status == JobStatus.queued.value)


def publish_next(settings: Settings, sweep_id: uuid.UUID) -> list[uuid.UUID]:
    """Publish the sweep's oldest held jobs until ``sweep_in_flight`` are queued or running; the ids
    published."""
    with session_scope(settings.effective_database_url) as session:
        sweep = session.get(Sweep, sweep_id, with_for_update=True)
        if sweep is None:
            return []
        own = (Job.sweep_id == sweep_id, Job.status.in_(_ACTIVE))
        in_flight = session.scalar(select(func.count()).select_from(Job).where(*own, ~HELD))
        room = settings.sweep_in_flight - int(in_flight or 0)
        if room <= 0:
            return []
        oldest = session.scalars(
            select(Job.id).where(Job.sweep_id == sweep_id, HELD).order_by(Job.created_at, Job.id).limit(room)
        ).all()
        held = mark_published(session, list(oldest))
    send(settings, held)
    return [job_id for job_id, _, _ in held]


def mark_published(session: Session, job_ids: list[uuid.UUID]) -> list[tuple[uuid.UUID, int, Any]]:
    """Publish those of ``job_ids`` still held back (``app.db.job_lifecycle.publish``: each under its
    next publication number); ``(id, publication, extraction record)`` of each, to send after the
    commit. A job that someone else published meanwhile is not moved here, so it goes out once."""
    marked = []
    for job_id in job_ids:
        moved = job_lifecycle.publish(session, job_id)
        if moved.moved and moved.publication is not None:
            marked.append((job_id, moved.publication, moved.features))
    return marked


def send(settings: Settings, jobs: list[tuple[uuid.UUID, int, Any]]) -> None:
    """Publish each ``(id, publication, extraction record)`` after the commit that gave it its number
    (``mark_published``, the reaper): to the marker stage when its features are in the cache. A failed
    send leaves a queued, unclaimed job, which the reaper publishes again after the queue grace."""
    for job_id, publication, features in jobs:
        try:
            enqueue_score(settings, str(job_id), publication, features)
        except Exception as exc:  # the broker is away
            log.warning("job %s not published (%s)", job_id, type(exc).__name__)


def publish_after(settings: Settings, job_id: uuid.UUID) -> list[uuid.UUID]:
    """After a job reached a final state: the next jobs of its sweep, if it belongs to one."""
    with session_scope(settings.effective_database_url) as session:
        sweep_id = session.scalar(select(Job.sweep_id).where(Job.id == job_id))
    return publish_next(settings, sweep_id) if sweep_id is not None else []


def publish_stalled(settings: Settings) -> list[uuid.UUID]:
    """Every sweep that holds jobs back gets ``publish_next`` (the reaper's repair pass)."""
    with session_scope(settings.effective_database_url) as session:
        sweeps = session.scalars(select(Job.sweep_id).where(HELD).distinct()).all()
    published: list[uuid.UUID] = []
    for sweep_id in sweeps:
        if sweep_id is not None:
            published += publish_next(settings, sweep_id)
    return published
