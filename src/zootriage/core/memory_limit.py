"""A child's memory bound, below what the host can give, enforced by the kernel.

The bound is ``min(setting, fraction × MemAvailable)`` read when the child starts, so a request the
host cannot hold is refused inside the child instead of waking the host's OOM killer (which may pick
the worker, the database or the API). It is enforced by a memory cgroup of the child's own where the
worker may make one (cgroup v2 ``memory.max`` with swap off, or v1 ``memory.limit_in_bytes``): the
kernel counts resident pages of the child and every process it starts, and kills the group at the
bound. Where no cgroup can be made, the rlimit on address space (:mod:`core.confine`, CPU only) is the
bound; on a GPU (CUDA maps far more address space than it uses) the parent polls resident memory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from zootriage.core import leftovers

AVAILABLE_FRACTION = 0.8
_V2_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
_V1_ROOT = Path("/sys/fs/cgroup/memory")


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


@dataclass
class MemoryCgroup:
    """A cgroup of one child's own with a hard memory bound; the child joins it before it execs."""

    path: Path
    version: int
    limit: int

    @classmethod
    def create(cls, limit: int) -> MemoryCgroup | None:
        """A new group under a hierarchy this process may write, or ``None`` (rlimits then apply)."""
        name = leftovers.new_name()
        for root in _V2_ROOTS:
            if "memory" in _read(root / "cgroup.subtree_control").split():
                _sweep(root)
                group = cls(root / name, 2, limit)
                if group._make({"memory.max": limit, "memory.swap.max": 0}):
                    return group
        if _V1_ROOT.is_dir():
            _sweep(_V1_ROOT)
            group = cls(_V1_ROOT / name, 1, limit)
            if group._make({"memory.limit_in_bytes": limit, "memory.memsw.limit_in_bytes": limit}):
                return group
        return None

    def _make(self, settings: dict[str, int]) -> bool:
        try:
            self.path.mkdir()
        except OSError:
            return False
        for name, value in settings.items():
            try:
                (self.path / name).write_text(str(value))
            except FileNotFoundError:
                continue  # memsw / swap.max: absent where swap accounting is off
            except OSError:
                self.remove()
                return False
        return True

    def join_fd(self) -> int:
        """A descriptor of ``cgroup.procs`` that the forked child writes ``0`` to (itself) before exec,
        so nothing it starts is ever outside the group."""
        return os.open(self.path / "cgroup.procs", os.O_WRONLY)

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the group at the bound."""
        if self.version == 2:
            return _count(self.path / "memory.events", "oom_kill") > 0
        return _count(self.path / "memory.oom_control", "oom_kill") > 0

    def remove(self) -> None:
        """Remove the group once its processes are gone (retried briefly while the kernel reaps them)."""
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                with contextlib.suppress(OSError):
                    for pid in _read(self.path / "cgroup.procs").split():
                        os.kill(int(pid), signal.SIGKILL)
                time.sleep(0.1)


def _sweep(root: Path) -> None:
    """Remove the groups of children whose worker was killed before it could (only empty ones can
    go: the kernel refuses the rest)."""
    for group in leftovers.left_by_dead_workers(root):
        with contextlib.suppress(OSError):
            group.rmdir()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _count(path: Path, key: str) -> int:
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0
