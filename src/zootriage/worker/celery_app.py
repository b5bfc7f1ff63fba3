"""The Celery application of the worker: the shared queue configuration plus process layout.

Start it with ``zootriage worker`` (or ``celery -A worker.celery_app worker``); the broker and
database URLs come from ``ZOOTRIAGE_*`` settings, the same ones the API reads.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from celery.signals import worker_init, worker_process_init

from zootriage.app.queue import celery_config
from zootriage.app.settings import get_settings
from zootriage.core.isolation import isolation
from zootriage.worker.gpus import prepare_pool_child, process_count
from zootriage.worker.warm import start_early

settings = get_settings()
celery_app = Celery("zootriage", include=["zootriage.worker.tasks"])
celery_app.conf.update(celery_config(settings))
celery_app.conf.update(worker_concurrency=process_count(settings))


@worker_init.connect
def _log_isolation(**_: Any) -> None:
    """Say once, at start, how model-loading children are confined here (see docs/security.md)."""
    logging.getLogger(__name__).warning("checkpoint isolation: %s", isolation().describe())


@worker_process_init.connect
def _prepare_child(**_: Any) -> None:
    """Pin the pool process's device and threads, then start its warm extraction children (when it
    takes extraction jobs), so that they import torch while the worker waits for its first job."""
    prepare_pool_child(settings)
    start_early(settings, celery_app.amqp.queues.consume_from)
