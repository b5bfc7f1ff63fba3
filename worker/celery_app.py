"""The Celery application of the worker: the shared queue configuration plus process layout.

Start it with ``zootriage worker`` (or ``celery -A worker.celery_app worker``); the broker and
database URLs come from ``ZOOTRIAGE_*`` settings, the same ones the API reads.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import worker_process_init

from app.queue import celery_config
from app.settings import get_settings
from worker.gpus import prepare_pool_child, process_count

settings = get_settings()
celery_app = Celery("zootriage", include=["worker.tasks"])
celery_app.conf.update(celery_config(settings))
celery_app.conf.update(worker_concurrency=process_count(settings))


@worker_process_init.connect
def _prepare_child(**_: Any) -> None:
    prepare_pool_child(settings)
