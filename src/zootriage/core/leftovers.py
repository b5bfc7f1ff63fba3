"""Names for a child's folder and memory cgroup that say which worker process made them, so what a
killed worker leaves behind (it cannot clean up after a SIGKILL) is found and removed by the next
child any worker starts: ``zootriage-child-<pid>-<random>``, stale once that pid is gone."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

PREFIX = "zootriage-child-"


def new_name() -> str:
    return f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"


def left_by_dead_workers(folder: Path) -> Iterator[Path]:
    """Entries of ``folder`` named by :func:`new_name` whose maker no longer runs."""
    for entry in folder.glob(f"{PREFIX}*"):
        pid = entry.name[len(PREFIX):].partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            yield entry


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
