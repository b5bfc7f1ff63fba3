"""Progress of a running job, written to its row, and the way a cancel reaches the computation.

Writes are throttled (a stage change, or half a second since the last write) so that a per-batch
callback costs nothing noticeable; and, whatever the stages say, to ``RATE`` writes a second after a
burst of ``BURST``: progress comes from the sandboxed child, whose lines an upload may write, and a
child alternating two stage names would otherwise cost the database one write a line for the job's
whole time limit. A real job changes stage a handful of times (sample, load, extract, markers).

Each write is conditional on the job still running: when a client cancelled it, the update matches
no row and ``JobCancelled`` unwinds the computation. Stages that
report no progress for a long while (the markers: GLUE's repeats and solver batches) poll
``cancelled`` instead, which reads the row at most every half second.
"""

from __future__ import annotations

import time
import uuid

from sqlalchemy import select, update

from zootriage.app.db.models import Job, JobStatus
from zootriage.app.db.session import session_scope
from zootriage.core.errors import Cancelled
from zootriage.core.plain_text import cleaned
from zootriage.worker.pause import pause_at

MIN_INTERVAL_S = 0.5
RATE = 10.0  # writes a second, at most, after a burst of
BURST = 20


class JobCancelled(Cancelled):
    """The job row left the running state while the computation was going on."""


class ProgressWriter:
    def __init__(self, database_url: str, job_id: uuid.UUID) -> None:
        self._url = database_url
        self._job_id = job_id
        self._stage: str | None = None
        self._last = 0.0
        self._checked = 0.0
        self._tokens, self._refilled = float(BURST), time.monotonic()

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage == self._stage and now - self._last < MIN_INTERVAL_S and done < total:
            return
        self._tokens = min(float(BURST), self._tokens + (now - self._refilled) * RATE)
        self._refilled = now
        if self._tokens < 1:
            return
        self._tokens -= 1
        entering = stage != self._stage
        self._stage, self._last = stage, now
        with session_scope(self._url) as session:
            result = session.execute(
                update(Job)
                .where(Job.id == self._job_id, Job.status == JobStatus.running.value)
                .values(stage=cleaned(stage[:32], allowed=""), done=int(done), total=int(total))
            )
        if result.rowcount == 0:  # type: ignore[attr-defined]
            raise JobCancelled(str(self._job_id))
        pause_at(stage, int(done), entering=entering)

    def cancelled(self) -> bool:
        """The ``core.errors.CancelCheck`` of this job: has its row left the running state?"""
        now = time.monotonic()
        if now - self._checked < MIN_INTERVAL_S:
            return False
        self._checked = now
        with session_scope(self._url) as session:
            status = session.scalar(select(Job.status).where(Job.id == self._job_id))
        return status != JobStatus.running.value
