"""The worker process's pool of warm extraction children (``core.warm_pool``), one per process.

Made at the first extraction of a worker process (a Celery prefork child: never before the fork, so
no pool thread or child is shared across processes) with the settings' limits, device and data roots;
``ZOOTRIAGE_WARM_CHILDREN=0`` turns it off (each job then starts a cold child).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from zootriage.app.settings import Settings
from zootriage.core.device import resolve_device
from zootriage.core.extraction import new_child
from zootriage.core.isolation import Child, ChildLimits
from zootriage.core.warm_pool import WarmPool


def child_limits(settings: Settings) -> ChildLimits:
    return ChildLimits(wall_s=settings.job_time_limit_s, memory_bytes=settings.child_memory_bytes)


def children(settings: Settings) -> Callable[[], Child] | None:
    """Where this process's jobs take their child from (``None``: a cold one each time)."""
    if settings.warm_children <= 0:
        return None
    roots = tuple(str(Path(root).resolve()) for root in settings.effective_data_roots)
    return _pool(child_limits(settings), resolve_device(None).type == "cuda", roots,
                 settings.warm_children).take


@functools.cache
def _pool(limits: ChildLimits, gpu: bool, roots: tuple[str, ...], size: int) -> WarmPool:
    return WarmPool(functools.partial(new_child, limits, gpu, roots), size)
