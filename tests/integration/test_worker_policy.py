"""The task's failure policy, run eagerly: transient errors retry; bad input and the time limit fail once."""

from __future__ import annotations

import time
import uuid

import pytest
from celery.exceptions import SoftTimeLimitExceeded

import worker.tasks as tasks
from app.settings import Settings
from core.errors import UnknownDataset
from worker.runner import Claimed


def test_an_unreachable_database_is_retried_until_max_retries(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    unreachable = settings.model_copy(update={"database_url": "postgresql+psycopg://postgres@127.0.0.1:1/x"})
    monkeypatch.setattr(tasks, "get_settings", lambda: unreachable)
    claims: list[uuid.UUID] = []
    real_claim = tasks.claim
    monkeypatch.setattr(tasks, "claim", lambda s, job: claims.append(job) or real_claim(s, job))
    result = tasks.score_job.apply(args=[str(uuid.uuid4())])
    assert result.state == "FAILURE"
    assert len(claims) == 1 + tasks.score_job.max_retries


@pytest.mark.parametrize(
    ("raised", "code"),
    [(UnknownDataset("no such dataset"), "unknown_dataset"), (SoftTimeLimitExceeded(), "time_limit")],
)
def test_bad_input_or_the_time_limit_fail_the_job_once_with_a_code(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, raised: Exception, code: str
) -> None:
    job = uuid.uuid4()
    failures: list[tuple[uuid.UUID, str]] = []
    attempts: list[int] = []

    def compute(_settings: Settings, _claimed: Claimed) -> None:
        attempts.append(1)
        raise raised

    monkeypatch.setattr(tasks, "get_settings", lambda: settings)
    monkeypatch.setattr(tasks, "claim", lambda s, j: Claimed(j, "k", {}, time.monotonic()))
    monkeypatch.setattr(tasks, "compute", compute)
    monkeypatch.setattr(tasks, "fail", lambda s, j, code, message: failures.append((j, code)))
    result = tasks.score_job.apply(args=[str(job)])
    assert result.state == "SUCCESS"
    assert attempts == [1]
    assert failures == [(job, code)]
