"""The job queue as both sides see it: one Celery configuration, a client to enqueue, a reachability probe.

A job runs in two stages, each a task on its own queue, so extraction and markers scale apart:

- ``EXTRACT_TASK`` on ``gpu``: sample the dataset, run the model in the isolated child, write the
  features to the shared feature cache; then it publishes the second stage;
- ``MARKERS_TASK`` on ``cpu``: read the features from the cache, compute the markers, store the run.

A worker consumes both queues unless told otherwise (``zootriage worker --queues gpu``), so one
process still does everything in the embedded default. The API only enqueues by task name, so it never
imports the worker (and never imports torch's scoring stack). The worker builds its Celery app from
the same ``celery_config``, so URLs and routing agree.

Every message carries the job's *publication* number besides its id: whoever publishes a stage
(the API, a sweep, the reaper, the worker handing over or sending back) moves the job through
``app.db.job_lifecycle``, which increments ``jobs.publication`` in that transaction, and a worker
claims the job only with the latest one (``job_lifecycle.claim``). An earlier message handed out
again later (Redis restores an unacked message once its visibility timeout passes, even while its
task still runs) is then told apart from the current one, although both stages share the job id as
task id.
"""

from __future__ import annotations

from contextlib import suppress
from functools import lru_cache
from typing import Any

from celery import Celery
from kombu import Connection, Exchange, Queue

from zootriage.app.settings import Settings
from zootriage.app.storage import features_stored

EXTRACT_TASK = "zootriage.extract_features"
MARKERS_TASK = "zootriage.compute_markers"
GPU_QUEUE = "gpu"
CPU_QUEUE = "cpu"
QUEUES = (GPU_QUEUE, CPU_QUEUE)
ROUTES = {EXTRACT_TASK: GPU_QUEUE, MARKERS_TASK: CPU_QUEUE}


def celery_config(settings: Settings) -> dict[str, Any]:
    url = settings.effective_broker_url
    transport_options: dict[str, Any] = {}
    if url.startswith("filesystem"):
        folder = settings.broker_folder
        (folder / "processed").mkdir(parents=True, exist_ok=True)
        transport_options = {
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"),
            "store_processed": False,
            "polling_interval": 0.1,
        }
    elif url.startswith(("redis", "rediss")):
        transport_options = {
            "visibility_timeout": settings.broker_visibility_timeout_s,
            # Look for expired unacked messages (a dead worker's job) every ~10 s instead of ~100 s.
            "unacked_restore_interval": 1,
            "socket_connect_timeout": settings.broker_timeout_s,
            "socket_timeout": settings.broker_timeout_s,
        }
    return {
        "broker_url": url,
        "broker_transport_options": transport_options,
        "broker_connection_timeout": settings.broker_timeout_s,
        "broker_connection_retry_on_startup": True,
        # Each queue on its own direct exchange and routing key: a bare Queue(name) takes the default
        # exchange and key (those of task_default_queue, gpu), so the cpu queue was declared on gpu/gpu.
        "task_queues": [Queue(name, Exchange(name, type="direct"), routing_key=name) for name in QUEUES],
        "task_routes": {task: {"queue": queue} for task, queue in ROUTES.items()},
        "task_default_queue": GPU_QUEUE,
        "task_ignore_result": True,
        "task_serializer": "json",
        "accept_content": ["json"],
        # A killed worker must not lose its job: ack only after the task returns, and hand the
        # message back when the pool child dies. One message in flight per process.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "task_time_limit": settings.job_time_limit_s,
        "task_soft_time_limit": max(1, settings.job_time_limit_s - 30),
        "worker_hijack_root_logger": False,
    }


def retry_backoff_cap_s(settings: Settings) -> int:
    """The longest retry countdown: ``job_retry_backoff_max_s``, but at most half the broker's visibility
    timeout. A message waiting out a countdown is held unacked by the worker, and Redis restores any
    message unacked past the visibility timeout, so a longer countdown would deliver a second copy of
    the retry while the first still waits (and each copy would retry again)."""
    return max(1, min(settings.job_retry_backoff_max_s, settings.broker_visibility_timeout_s // 2))


@lru_cache(maxsize=4)
def _client(settings_json: str) -> Celery:
    settings = Settings.model_validate_json(settings_json)
    client = Celery("zootriage-api")
    client.conf.update(celery_config(settings))
    return client


def enqueue_score(
    settings: Settings, job_id: str, publication: int, extraction: dict[str, Any] | None = None
) -> None:
    """Publish the job's first stage still to do: markers (``cpu``) when its extraction record
    (``Job.features``) names a feature-cache entry the cache holds, else extraction (``gpu``), which
    finds a cached entry itself and passes the job on. The entry point for every service that starts
    or restarts a job; ``publication`` is the number its transaction gave the job."""
    features_key = (extraction or {}).get("cache_key")
    cached = features_key is not None and features_stored(settings, features_key)
    publish(settings, MARKERS_TASK if cached else EXTRACT_TASK, job_id, publication)


def publish(settings: Settings, task: str, job_id: str, publication: int) -> None:
    """Send one stage's task (routed to its queue) under the job's current ``publication`` number; the
    job id is the task id so a cancel can revoke it by name, whichever stage it is in."""
    _client(settings.model_dump_json()).send_task(
        task,
        args=[job_id, publication],
        task_id=job_id,
        retry=True,
        retry_policy={"max_retries": 1, "interval_start": 0, "interval_step": 0.2},
    )


def revoke(settings: Settings, job_id: str) -> None:
    """Best effort: workers drop a revoked queued task; a running one notices the cancelled row anyway.

    Broadcast is not supported by every transport (the embedded filesystem broker has none), and the
    job row is the real source of truth, so a failure here is not an error.
    """
    with suppress(Exception):
        _client(settings.model_dump_json()).control.revoke(job_id)


def broker_reachable(settings: Settings) -> str | None:
    """``None`` when the broker answers, else why not."""
    config = celery_config(settings)
    try:
        with Connection(
            config["broker_url"],
            transport_options=config["broker_transport_options"],
            connect_timeout=settings.broker_timeout_s,
        ) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=settings.broker_timeout_s)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None
