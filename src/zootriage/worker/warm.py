"""The worker process's pool of warm extraction children (``core.warm_pool``), one per process.

Made when a worker process that takes extraction jobs starts (a Celery prefork child, in
``worker_process_init``: never before the fork, so no pool thread or child is shared across processes),
or at its first extraction otherwise, with the settings' limits, device and data roots;
``ZOOTRIAGE_WARM_CHILDREN=0`` turns it off (each job then starts a cold child).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from zootriage.app.queue import GPU_QUEUE
from zootriage.app.settings import Settings
from zootriage.core.device import resolve_device
from zootriage.core.extraction import new_child
from zootriage.core.isolation import Child, ChildLimits
from zootriage.core.warm_pool import WarmPool

log = logging.getLogger(__name__)


def child_limits(settings: Settings) -> ChildLimits:
    return ChildLimits(wall_s=settings.job_time_limit_s, memory_bytes=settings.child_memory_bytes)


def children(settings: Settings) -> Callable[[], Child] | None:
    """Where this process's jobs take their child from (``None``: a cold one each time)."""
    if settings.warm_children <= 0:
        return None
    roots = tuple(str(Path(root).resolve()) for root in settings.effective_data_roots)
    return _pool(child_limits(settings), resolve_device(None).type == "cuda", roots,
                 settings.warm_children).take


def start_early(settings: Settings, queues: Iterable[str]) -> None:
    """Start this process's warm children now, at the process's start, when it consumes the extraction
    queue (``gpu``) and has a pool: its first job then finds a child ready instead of waiting for one
    to import torch (seconds; a worker started by an autoscaler or after a crash used to make its
    first job pay it). A worker of the ``cpu`` queue alone starts none. Logs that it starts them
    (the pool logs each one ready)."""
    if GPU_QUEUE in queues and settings.warm_children > 0:
        log.info("starting %d warm children at the process's start", settings.warm_children)
        children(settings)


@functools.cache
def _pool(limits: ChildLimits, gpu: bool, roots: tuple[str, ...], size: int) -> WarmPool:
    warm = functools.partial(new_child, limits, gpu, roots)
    return WarmPool(warm, size, cold_factory=functools.partial(warm, job_waiting=True))
