"""The scoring task and its failure policy.

- bad input (``core.errors.ZooError``) fails the job with that error's code: retrying cannot help;
- a lost database or broker is transient: retried with exponential backoff (and jitter);
- a cancel (the job row left "running") stops quietly; the time limit fails the job with its code;
- anything else is a bug: the job fails as ``internal_error`` with the exception text, no retry.
"""

from __future__ import annotations

import logging
import uuid

import redis.exceptions
from celery.exceptions import SoftTimeLimitExceeded
from kombu.exceptions import OperationalError as BrokerError
from sqlalchemy.exc import InterfaceError, OperationalError

from app.queue import SCORE_TASK
from app.settings import get_settings
from core.errors import ZooError
from worker.celery_app import celery_app
from worker.progress import JobCancelled
from worker.runner import JobNotVisible, claim, compute, fail, store

log = logging.getLogger(__name__)

TRANSIENT = (OperationalError, InterfaceError, BrokerError, redis.exceptions.ConnectionError, JobNotVisible)


@celery_app.task(
    name=SCORE_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    retry_backoff=2,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=10,
)
def score_job(job_id: str) -> None:
    settings = get_settings()
    job = uuid.UUID(job_id)
    claimed = claim(settings, job)
    if claimed is None:
        return
    try:
        result = compute(settings, claimed)
    except ZooError as exc:
        fail(settings, job, exc.code, exc.message)
        return
    except JobCancelled:
        log.info("job %s was cancelled while running", job_id)
        return
    except SoftTimeLimitExceeded:
        fail(settings, job, "time_limit", f"the job ran past its limit of {settings.job_time_limit_s} s")
        return
    except TRANSIENT:
        raise
    except Exception as exc:
        log.exception("job %s failed", job_id)
        fail(settings, job, "internal_error", f"{type(exc).__name__}: {exc}")
        return
    store(settings, claimed, result)
