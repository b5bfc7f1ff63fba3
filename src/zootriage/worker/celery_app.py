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
    prepare_pool_child(settings)
