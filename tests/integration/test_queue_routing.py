"""Each stage's task lands on its own queue only, on a real Redis broker with both queues declared as a
worker declares them: a markers (cpu) task never reaches the gpu queue, an extraction (gpu) task never
the cpu queue. And each queue is declared on its own exchange and key (issue 27: the worker's banner
showed the cpu queue bound to the gpu exchange and key, the default of a bare ``Queue(name)``)."""

from __future__ import annotations

import uuid

import redis
from celery import Celery

from zootriage.app.queue import CPU_QUEUE, EXTRACT_TASK, GPU_QUEUE, MARKERS_TASK, celery_config, publish
from zootriage.app.settings import Settings


def _ours(client: redis.Redis, queue: str, job_id: str) -> list[bytes]:
    return [m for m in client.lrange(queue, 0, -1) if job_id.encode() in m]


def test_each_stage_task_lands_on_its_own_queue_only(settings: Settings, redis_server: str) -> None:
    own = settings.model_copy(update={"broker_url": f"{redis_server}/11"})  # no worker consumes db 11
    client = redis.Redis.from_url(own.broker_url)
    jobs = {EXTRACT_TASK: str(uuid.uuid4()), MARKERS_TASK: str(uuid.uuid4())}
    worker = Celery("declares-like-a-worker")
    worker.conf.update(celery_config(own))
    with worker.connection_for_write() as connection:  # a worker consuming both queues binds both
        for queue in worker.amqp.queues.values():
            queue(connection.default_channel).declare()
    try:
        for task, job_id in jobs.items():
            publish(own, task, job_id, 1)
        assert len(_ours(client, GPU_QUEUE, jobs[EXTRACT_TASK])) == 1
        assert _ours(client, CPU_QUEUE, jobs[EXTRACT_TASK]) == []
        assert len(_ours(client, CPU_QUEUE, jobs[MARKERS_TASK])) == 1
        assert _ours(client, GPU_QUEUE, jobs[MARKERS_TASK]) == []
    finally:
        for queue in (GPU_QUEUE, CPU_QUEUE):
            for job_id in jobs.values():
                for message in _ours(client, queue, job_id):
                    client.lrem(queue, 0, message)


def test_the_worker_declares_each_queue_on_its_own_exchange_and_key() -> None:
    app = Celery("routing-check")
    app.conf.update(celery_config(Settings()))
    for name in (GPU_QUEUE, CPU_QUEUE):
        queue = app.amqp.queues[name]
        assert (queue.exchange.name, queue.routing_key) == (name, name)
    assert app.amqp.router.route({}, MARKERS_TASK)["queue"].routing_key == CPU_QUEUE
