"""The two stage tasks of a job and their failure policy.

``extract_features`` (queue ``gpu``) samples, extracts in the isolated child and hands the job to
``compute_markers`` (queue ``cpu``), which reads the features from the shared cache and stores the run
(worker/runner.py). Both follow one policy:

- bad input (``core.errors.ZooError``) fails the job with that error's code: retrying cannot help;
- a lost database or broker is transient: retried with exponential backoff (and jitter), within the
  settings' budget (``job_max_retries``, ``job_retry_backoff_max_s``, capped below the broker's
  visibility timeout: ``app.queue.retry_backoff_cap_s``). When the budget runs out the
  message is gone and the row may still say running; its heartbeat has stopped with the task, so
  once the database is back the reaper (app/services/reaper.py) requeues or fails it;
- a cancel (the job row left "running", seen by a progress write or the marker stage's cancel
  check) stops quietly; the time limit (per stage) fails the job with its code;
- after either task (not before a retry), the job's sweep, if any, publishes its next job
  (``app.services.sweep_queue``): a sweep counts a handed-over job as still in flight, so only a
  final state makes room;
- anything else is a bug: the job fails as ``internal_error`` with a message that names the job id
  and nothing else; the traceback goes to the worker log only.

While a stage runs, a heartbeat thread stamps the row so the reaper can tell a lost worker.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import redis.exceptions
from celery import Task
from celery.exceptions import SoftTimeLimitExceeded
from kombu.exceptions import OperationalError as BrokerError
from sqlalchemy.exc import InterfaceError, OperationalError

from zootriage.app.queue import EXTRACT_TASK, MARKERS_TASK, retry_backoff_cap_s
from zootriage.app.services.sweep_queue import publish_after
from zootriage.app.settings import Settings, get_settings
from zootriage.core.errors import Cancelled, ZooError
from zootriage.worker.celery_app import celery_app
from zootriage.worker.claims import ClaimToken
from zootriage.worker.heartbeat import Heartbeat
from zootriage.worker.messages import internal_error_message
from zootriage.worker.runner import (
    EXTRACT,
    MARKERS,
    Claimed,
    JobNotVisible,
    SentBack,
    claim,
    extract,
    fail,
    hand_over,
    markers,
    send_back,
    store,
)

log = logging.getLogger(__name__)

TRANSIENT = (OperationalError, InterfaceError, BrokerError, redis.exceptions.ConnectionError)
# A job row not yet visible (the API publishes inside the transaction that commits it) is looked for
# again after 0.5, 1, 1.5, ... s, NOT_VISIBLE_LOOKS times (18 s in all), then the message is dropped.
NOT_VISIBLE_LOOKS = 8
NOT_VISIBLE_STEP_S = 0.5
_settings = get_settings()
_POLICY: dict[str, Any] = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": TRANSIENT,
    "retry_backoff": 2,
    "retry_backoff_max": retry_backoff_cap_s(_settings),
    "retry_jitter": True,
    "max_retries": _settings.job_max_retries,
}
T = TypeVar("T")


def worker_name(task: Task) -> str:
    """The Celery node name (``name@host``) of the worker running ``task``: tells apart two workers
    on one host, as ``socket.gethostname`` cannot."""
    return str(task.request.hostname or socket.gethostname())


def delivery(task: Task) -> ClaimToken:
    """This delivery of ``task``: a redelivered copy of a message has the same id and retry count."""
    return ClaimToken.here(str(task.request.id), int(task.request.retries or 0))


def visible_claim(
    task: Task, settings: Settings, job: uuid.UUID, stage: str, publication: int | None
) -> Claimed | None:
    """``claim`` the job for ``stage``; a row not visible yet is looked for again shortly (a retry after
    0.5 s × the looks so far), and after ``NOT_VISIBLE_LOOKS`` looks the message is dropped (None): the
    job was deleted, or its transaction rolled back after publishing.

    Short delays on purpose: the Redis transport restores a message held unacked past the broker's
    visibility timeout, even one the worker still holds for its countdown, so a countdown longer than
    that timeout delivers a second copy, and each copy retries again; with a missing row that grows
    into a storm of copies (seen at a 8 s timeout with a 120 s backoff)."""
    try:
        return claim(settings, job, stage, delivery(task), publication)
    except JobNotVisible:
        looks = int(task.request.retries or 0)
        if looks >= NOT_VISIBLE_LOOKS:
            log.warning("job %s: no such job after %d looks, its %s message dropped", job, looks + 1, stage)
            return None
        raise task.retry(countdown=NOT_VISIBLE_STEP_S * (looks + 1), max_retries=NOT_VISIBLE_LOOKS) from None


def guarded(settings: Settings, job: uuid.UUID, work: Callable[[], T]) -> T | None:
    """``work()`` under the heartbeat and the failure policy; ``None`` when the job was failed,
    cancelled or sent back (nothing more to do), the exception itself when it is transient."""
    try:
        with Heartbeat(settings.effective_database_url, job, settings.heartbeat_interval_s):
            return work()
    except ZooError as exc:
        fail(settings, job, exc.code, exc.message)
    except Cancelled:
        log.info("job %s was cancelled while running", job)
    except SentBack:
        log.info("job %s went back to extraction", job)
    except SoftTimeLimitExceeded:
        fail(settings, job, "time_limit", f"the job ran past its limit of {settings.job_time_limit_s} s")
    except TRANSIENT:
        raise
    except Exception:
        log.exception("job %s failed", job)
        fail(settings, job, "internal_error", internal_error_message(str(job)))
    return None


def ending(settings: Settings, job: uuid.UUID, write: Callable[[], None]) -> None:
    """The write that ends a stage (``hand_over``, ``store``): a transient error is retried as any
    other; any other error (a bug, a value the database refuses) fails the job as ``internal_error``
    at once, instead of leaving it ``running`` for the reaper to retry into the same error and end as
    ``worker_lost``."""
    try:
        write()
    except TRANSIENT:
        raise
    except Exception:
        log.exception("job %s: the write that ends its stage failed", job)
        fail(settings, job, "internal_error", internal_error_message(str(job)))


@celery_app.task(name=EXTRACT_TASK, **_POLICY)
def extract_features(self: Task, job_id: str, publication: int | None = None) -> None:
    settings = get_settings()
    job = uuid.UUID(job_id)
    claimed = visible_claim(self, settings, job, EXTRACT, publication)
    if claimed is None:
        sweep_goes_on(settings, job)
        return
    extracted = guarded(settings, job, lambda: extract(settings, claimed))
    if extracted is not None:
        ending(settings, job, lambda: hand_over(settings, claimed, extracted, worker_name(self)))
    sweep_goes_on(settings, job)


@celery_app.task(name=MARKERS_TASK, **_POLICY)
def compute_markers(self: Task, job_id: str, publication: int | None = None) -> None:
    settings = get_settings()
    job = uuid.UUID(job_id)
    claimed = visible_claim(self, settings, job, MARKERS, publication)
    if claimed is None:
        sweep_goes_on(settings, job)
        return
    if claimed.features is None:  # a stale message for a job with no extraction record
        send_back(settings, job, claimed.publication)
        return
    result = guarded(settings, job, lambda: markers(settings, claimed))
    if result is not None:
        ending(settings, job, lambda: store(settings, claimed, result, worker_name(self)))
    sweep_goes_on(settings, job)


def sweep_goes_on(settings: Settings, job: uuid.UUID) -> None:
    """Let the job's sweep, if any, publish its next job (after a task, never before a retry)."""
    try:
        publish_after(settings, job)
    except Exception as exc:  # the database or broker is away: the reaper's pass publishes it later
        log.warning("job %s: its sweep's next job not published (%s)", job, type(exc).__name__)
