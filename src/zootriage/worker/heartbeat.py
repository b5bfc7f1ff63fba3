"""The heartbeat of a running job: a small thread that stamps ``jobs.heartbeat_at`` while it runs.

Progress writes cannot serve as a sign of life: a stage can go minutes without one (loading a big
model, one long solver batch). The thread runs beside the task in the same pool process, so a
SIGKILL of the worker (or of that process) silences it, which is exactly what the reaper
(app/services/reaper.py) looks for. A failed stamp (the database is away) is logged and skipped:
the task itself finds out and retries.
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import UTC, datetime
from types import TracebackType

from sqlalchemy import update

from zootriage.app.db.models import Job, JobStatus
from zootriage.app.db.session import session_scope

log = logging.getLogger(__name__)


class Heartbeat:
    """``with Heartbeat(url, job_id, interval):`` stamps the job every ``interval`` seconds."""

    def __init__(self, database_url: str, job_id: uuid.UUID, interval_s: float) -> None:
        self._url = database_url
        self._job_id = job_id
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{job_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                with session_scope(self._url) as session:
                    session.execute(
                        update(Job)
                        .where(Job.id == self._job_id, Job.status == JobStatus.running.value)
                        .values(heartbeat_at=datetime.now(UTC))
                    )
            except Exception as exc:
                log.warning("job %s: heartbeat not written (%s)", self._job_id, type(exc).__name__)
