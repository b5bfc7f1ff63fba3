"""Which delivery holds a running job, and whether that claim still lives.

With ``acks_late`` a message stays unacknowledged while its task runs; Redis hands it out once more
when the visibility timeout passes (a long job, or a job held at a test pause), and a killed pool
child's message comes back at once (``reject_on_worker_lost``). Both arrive as the same task id and
retry count. The first must be dropped (the job is still running elsewhere: running it again wastes
a GPU and counts a false attempt), the second must take the job over. Whatever claimed the job last
wrote its ``ClaimToken`` into ``jobs.claimed_by``; a delivery with the same task id and retry count
is a duplicate of that claim, and the claim lives while

    heartbeat age < min(3 · heartbeat_interval, heartbeat_grace)   and
    (the holder is on another host, or its process is alive on this one).

A retry (one more ``retries``) is never a duplicate: it follows a failed attempt. Neither is a
republish by the reaper, which queues the job again (a duplicate needs a running job) and only after
its claim died. A copy of an *earlier* message (the extraction's, restored after the job was handed
to its marker stage) carries an old publication number and is dropped whatever this says, by the
fence of ``app.db.job_lifecycle``: a task id alone cannot tell it, since both stages use the job id.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime

SEPARATOR = "|"


@dataclass(frozen=True)
class ClaimToken:
    """One delivery of one task, in one process of one host."""

    host: str
    pid: int
    task_id: str
    retries: int

    @classmethod
    def here(cls, task_id: str, retries: int) -> ClaimToken:
        return cls(socket.gethostname(), os.getpid(), task_id, retries)

    def encode(self) -> str:
        return SEPARATOR.join([self.host, str(self.pid), self.task_id, str(self.retries)])[:255]

    @classmethod
    def decode(cls, text: str | None) -> ClaimToken | None:
        """The token a claim wrote, or None for a job claimed before tokens (or a malformed one)."""
        parts = (text or "").split(SEPARATOR)
        if len(parts) != 4 or not parts[1].isdigit() or not parts[3].isdigit():
            return None
        return cls(parts[0], int(parts[1]), parts[2], int(parts[3]))

    def same_delivery(self, other: ClaimToken) -> bool:
        return self.task_id == other.task_id and self.retries == other.retries


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def claim_lives(
    holder: ClaimToken, heartbeat_at: datetime | None, now: datetime, interval_s: float, grace_s: float
) -> bool:
    """Whether the claim ``holder`` wrote is still running its task (see the module docstring)."""
    if heartbeat_at is None:
        return False
    fresh = (now - heartbeat_at).total_seconds() < min(3 * interval_s, grace_s)
    if holder.host != socket.gethostname():
        return fresh
    return fresh and process_alive(holder.pid)
