"""A running job's progress as the worker writes it to its row (``worker.progress``), on real
PostgreSQL: a real job's stages all land, while a child that spams stage changes or finished stages
(its lines are an upload's to write) costs the database at most ``RATE`` writes a second after a
burst, instead of one a line for the job's whole time limit."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from sqlalchemy.orm import Session

from tests.integration.databases import running_job_database
from zootriage.app.db.models import Job
from zootriage.app.db.session import session_scope
from zootriage.worker import progress
from zootriage.worker.progress import BURST, RATE, ProgressWriter


@pytest.fixture
def running_job() -> Iterator[tuple[str, uuid.UUID]]:
    with running_job_database() as made:
        yield made


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per database session the writer opens (each a write)."""
    opened: list[int] = []

    def counted(url: str) -> AbstractContextManager[Session]:
        opened.append(1)
        return session_scope(url)

    monkeypatch.setattr(progress, "session_scope", counted)
    return opened


def _row(url: str, job_id: uuid.UUID) -> Any:
    with session_scope(url) as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job.stage, job.done, job.total


def test_every_stage_of_a_real_job_lands(running_job: tuple[str, uuid.UUID], writes: list[int]) -> None:
    url, job_id = running_job
    write = ProgressWriter(url, job_id)
    for stage, total in (("sample", 1), ("load_model", 1), ("extract", 5), ("markers", 3)):
        for done in range(total + 1):
            write(stage, done, total)
            assert _row(url, job_id)[0] == stage  # each stage is shown as soon as it starts
    # two writes a stage (its start, its end); the steps between fall within half a second of them
    assert _row(url, job_id) == ("markers", 3, 3) and len(writes) == 8


@pytest.mark.parametrize("spam", ["alternating stages", "finished stages"])
def test_a_child_spamming_progress_costs_a_bounded_number_of_writes(
    running_job: tuple[str, uuid.UUID], writes: list[int], spam: str
) -> None:
    url, job_id = running_job
    write = ProgressWriter(url, job_id)
    start = time.monotonic()
    for line in range(600):
        if spam == "alternating stages":
            write("ab"[line % 2], 0, 10)
        else:
            write("extract", 10, 10)
    elapsed = time.monotonic() - start
    assert len(writes) <= BURST + RATE * elapsed + 1, (len(writes), elapsed)
    assert len(writes) < 600


def test_a_stage_name_is_stored_without_control_characters(
    running_job: tuple[str, uuid.UUID], writes: list[int]
) -> None:
    url, job_id = running_job
    ProgressWriter(url, job_id)("ext\x1b[2Jract", 0, 1)
    stage = _row(url, job_id)[0]
    assert "\x1b" not in stage and stage.startswith("ext") and stage.endswith("ract")
