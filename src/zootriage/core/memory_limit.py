"""A child's memory bound, below what the host can give, enforced by the kernel.

The bound is ``min(setting, fraction × MemAvailable)`` read when the child starts, so a request the
host cannot hold is refused inside the child instead of waking the host's OOM killer (which may pick
the worker, the database or the API). It is enforced by a memory cgroup of the child's own where the
worker may make one (cgroup v2 ``memory.max`` with swap off, or v1 ``memory.limit_in_bytes``): the
kernel counts resident pages of the child and every process it starts, and kills the group at the
bound (:mod:`core.cgroups`). Where no cgroup can be made, the rlimit on address space
(:mod:`core.confine`, CPU only) is the bound; on a GPU (CUDA maps far more address space than it
uses) the parent polls resident memory.
"""

from __future__ import annotations

from pathlib import Path

AVAILABLE_FRACTION = 0.8


def available_bytes() -> int | None:
    """``MemAvailable`` from /proc/meminfo (``None`` where the kernel does not say)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def bound(setting: int, fraction: float = AVAILABLE_FRACTION) -> int:
    """The child's memory bound: the setting, lowered to ``fraction`` of what the host has free."""
    free = available_bytes()
    return setting if free is None else max(64 << 20, min(setting, int(free * fraction)))
