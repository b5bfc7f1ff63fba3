"""A child's own control groups: its memory bound and its count of processes, enforced by the kernel.

Each child gets groups of its own, made before it starts and joined by the forked process before it
execs (:meth:`ChildCgroup.join_fds`), so nothing the child starts is ever outside them:

- **memory** (cgroup v2 ``memory.max`` with ``memory.swap.max`` 0, or v1 ``memory.limit_in_bytes`` and
  ``memory.memsw.limit_in_bytes``): the kernel counts the resident pages of the child and of every
  process it starts, and kills the group at the bound (:mod:`core.memory_limit` picks the bound);
- **tasks** (``pids.max``, the same file in v1 and v2): the processes *and threads* of the group. A
  fork bomb gets ``EAGAIN`` at the bound, inside its own group, so a job running beside it in another
  child of the same sandbox user is not starved. ``RLIMIT_NPROC``, which counts every process of the
  user across all its children, is the bound only where no such group can be made.

In cgroup v2 a process belongs to one group of the unified hierarchy, so both bounds are files of one
group, for the controllers the root's ``cgroup.subtree_control`` enables. In v1 each controller has
its own hierarchy (``/sys/fs/cgroup/memory``, ``/sys/fs/cgroup/pids``) and the child joins a group in
each. Where neither can be made (no cgroupfs, not allowed to write it) the caller falls back to
rlimits and polling (:mod:`core.isolation`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from zootriage.core import leftovers

V2_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
V1_ROOTS = {"memory": Path("/sys/fs/cgroup/memory"), "pids": Path("/sys/fs/cgroup/pids")}


def _memory_files(limit: int, version: int) -> dict[str, int]:
    if version == 2:
        return {"memory.max": limit, "memory.swap.max": 0}
    return {"memory.limit_in_bytes": limit, "memory.memsw.limit_in_bytes": limit}


@dataclass
class ChildCgroup:
    """The groups of one child: ``memory`` and ``tasks`` are the folders whose files bound each (the
    same folder in v2, ``None`` for a bound no group holds); ``folders`` every group made."""

    version: int
    memory: Path | None = None
    tasks: Path | None = None
    folders: list[Path] = field(default_factory=list)

    @classmethod
    def create(cls, memory_bytes: int, tasks: int) -> ChildCgroup | None:
        """Groups bounding the child's memory to ``memory_bytes`` and its processes and threads to
        ``tasks``, under the first hierarchy this process may write; ``None`` where no group could be
        made (each bound is then left to the rlimits)."""
        name = leftovers.new_name()
        for root in V2_ROOTS:
            enabled = set(_read(root / "cgroup.subtree_control").split()) & {"memory", "pids"}
            if not enabled:
                continue
            _sweep(root)
            folder = root / name
            files = {**(_memory_files(memory_bytes, 2) if "memory" in enabled else {}),
                     **({"pids.max": tasks} if "pids" in enabled else {})}
            if _make(folder, files):
                return cls(2, folder if "memory" in enabled else None, folder if "pids" in enabled else None,
                           [folder])
        group = cls(1)
        for controller, files in (("memory", _memory_files(memory_bytes, 1)), ("pids", {"pids.max": tasks})):
            root = V1_ROOTS[controller]
            if not root.is_dir():
                continue
            _sweep(root)
            if _make(root / name, files):
                group.folders.append(root / name)
                if controller == "memory":
                    group.memory = root / name
                else:
                    group.tasks = root / name
        return group if group.folders else None

    def join_fds(self) -> list[int]:
        """Descriptors of each group's ``cgroup.procs``, which the forked child writes ``0`` (itself)
        to before it execs; the caller closes them once the child is started."""
        fds: list[int] = []
        try:
            for folder in self.folders:
                fds.append(os.open(folder / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the group at its memory bound."""
        if self.memory is None:
            return False
        events = "memory.events" if self.version == 2 else "memory.oom_control"
        return _count(self.memory / events, "oom_kill") > 0

    def tasks_refused(self) -> int:
        """How many times the kernel refused the group a new process or thread at its bound
        (``pids.events``' ``max``)."""
        return 0 if self.tasks is None else _count(self.tasks / "pids.events", "max")

    def remove(self) -> None:
        """Remove every group once its processes are gone (those still in it are killed, and the
        removal retried briefly while the kernel reaps them)."""
        for folder in self.folders:
            _remove(folder)


def _make(folder: Path, files: dict[str, int]) -> bool:
    """The group ``folder`` with each of ``files`` written; a file the kernel lacks (the swap files
    where swap accounting is off) is skipped, any other failure removes the group."""
    try:
        folder.mkdir()
    except OSError:
        return False
    for name, value in files.items():
        try:
            (folder / name).write_text(str(value))
        except FileNotFoundError:
            continue
        except OSError:
            _remove(folder)
            return False
    return True


def _remove(folder: Path) -> None:
    for _ in range(50):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            with contextlib.suppress(OSError):
                for pid in _read(folder / "cgroup.procs").split():
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
