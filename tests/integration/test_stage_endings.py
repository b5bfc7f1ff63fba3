"""The write that ends a stage (``worker.tasks.ending``), on real PostgreSQL: a transient database
error is raised for Celery to retry; any other error fails the job as ``internal_error`` at once,
where it used to leave the job ``running`` until the reaper retried it into the same error."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy.exc import OperationalError

from tests.integration.databases import running_job_database
from zootriage.app.db.models import Job
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings
from zootriage.worker.tasks import ending


@pytest.fixture
def running(settings: Settings) -> Iterator[tuple[Settings, uuid.UUID]]:
    with running_job_database() as (url, job_id):
        yield settings.model_copy(update={"database_url": url}), job_id


def _state(settings: Settings, job_id: uuid.UUID) -> tuple[str, str | None, str | None]:
    with session_scope(settings.effective_database_url) as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job.status, job.error_code, job.error_message


def test_a_refused_ending_write_fails_the_job_at_once(running: tuple[Settings, uuid.UUID]) -> None:
    settings, job_id = running

    def refused() -> None:
        raise ValueError("a value the database refuses")

    ending(settings, job_id, refused)
    status, code, message = _state(settings, job_id)
    assert (status, code) == ("failed", "internal_error") and str(job_id) in (message or "")


def test_a_transient_error_is_left_to_the_retry(running: tuple[Settings, uuid.UUID]) -> None:
    settings, job_id = running

    def away() -> None:
        raise OperationalError("UPDATE jobs", {}, Exception("the database is away"))

    with pytest.raises(OperationalError):
        ending(settings, job_id, away)
    assert _state(settings, job_id)[0] == "running"
