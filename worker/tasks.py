"""The scoring task and its failure policy.

- bad input (``core.errors.ZooError``) fails the job with that error's code: retrying cannot help;
- a lost database or broker is transient: retried with exponential backoff (and jitter), within the
  settings' budget (``job_max_retries``, ``job_retry_backoff_max_s``). When the budget runs out the
  message is gone and the row may still say running; its heartbeat has stopped with the task, so
  once the database is back the reaper (app/services/reaper.py) requeues or fails it;
- a cancel (the job row left "running", seen by a progress write or the marker stage's cancel
  check) stops quietly; the time limit fails the job with its code;
- after any of these (not before a retry), the job's sweep, if any, publishes its next job
  (``app.services.sweep_queue``);
- anything else is a bug: the job fails as ``internal_error`` with a message that names the job id
  and nothing else; the traceback goes to the worker log only.

While the task runs, a heartbeat thread stamps the row so the reaper can tell a lost worker.
"""

from __future__ import annotations

import logging
import uuid

import redis.exceptions
from celery.exceptions import SoftTimeLimitExceeded
from kombu.exceptions import OperationalError as BrokerError
from sqlalchemy.exc import InterfaceError, OperationalError

from zootriage.app.queue import SCORE_TASK
from zootriage.app.services.sweep_queue import publish_after
from zootriage.app.settings import Settings, get_settings
from zootriage.core.errors import Cancelled, ZooError
from zootriage.worker.celery_app import celery_app
from zootriage.worker.heartbeat import Heartbeat
from zootriage.worker.messages import internal_error_message
from zootriage.worker.runner import JobNotVisible, claim, compute, fail, store

log = logging.getLogger(__name__)

TRANSIENT = (OperationalError, InterfaceError, BrokerError, redis.exceptions.ConnectionError, JobNotVisible)
_settings = get_settings()


@celery_app.task(
    name=SCORE_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    retry_backoff=2,
    retry_backoff_max=_settings.job_retry_backoff_max_s,
    retry_jitter=True,
    max_retries=_settings.job_max_retries,
)
def score_job(job_id: str) -> None:
    """Score the job, then (whatever its outcome, unless it is retried) let its sweep publish the
    next one: the one place where the worker's jobs reach a final state."""
    settings = get_settings()
    job = uuid.UUID(job_id)
    _score(settings, job)
    try:
        publish_after(settings, job)
    except Exception as exc:  # the database or broker is away: the reaper's pass publishes it later
        log.warning("job %s: its sweep's next job not published (%s)", job_id, type(exc).__name__)


def _score(settings: Settings, job: uuid.UUID) -> None:
    job_id = str(job)
    claimed = claim(settings, job)
    if claimed is None:
        return
    try:
        with Heartbeat(settings.effective_database_url, job, settings.heartbeat_interval_s):
            result = compute(settings, claimed)
    except ZooError as exc:
        fail(settings, job, exc.code, exc.message)
        return
    except Cancelled:
        log.info("job %s was cancelled while running", job_id)
        return
    except SoftTimeLimitExceeded:
        fail(settings, job, "time_limit", f"the job ran past its limit of {settings.job_time_limit_s} s")
        return
    except TRANSIENT:
        raise
    except Exception:
        log.exception("job %s failed", job_id)
        fail(settings, job, "internal_error", internal_error_message(job_id))
        return
    store(settings, claimed, result)
