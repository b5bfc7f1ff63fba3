"""The task's failure policy, run eagerly: transient errors retry; bad input and the time limit fail once;
what a failed job tells its readers; the heartbeat while it runs."""

from __future__ import annotations

import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

import pytest
from celery.exceptions import SoftTimeLimitExceeded

import zootriage.worker.tasks as tasks
from tests.integration.jobs import queued_job, stored
from zootriage.app.settings import Settings
from zootriage.core.errors import BadImage, UnknownDataset
from zootriage.worker.claims import ClaimToken
from zootriage.worker.runner import Claimed


def test_an_unreachable_database_is_retried_until_max_retries(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    unreachable = settings.model_copy(update={"database_url": "postgresql+psycopg://postgres@127.0.0.1:1/x"})
    monkeypatch.setattr(tasks, "get_settings", lambda: unreachable)
    claims: list[uuid.UUID] = []
    real_claim = tasks.claim

    def counted(
        s: Settings, job: uuid.UUID, stage: str, token: ClaimToken, publication: int | None
    ) -> Claimed | None:
        claims.append(job)
        return real_claim(s, job, stage, token, publication)

    monkeypatch.setattr(tasks, "claim", counted)
    result = tasks.extract_features.apply(args=[str(uuid.uuid4())])
    assert result.state == "FAILURE"
    assert len(claims) == 1 + tasks.extract_features.max_retries


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
    monkeypatch.setattr(
        tasks, "claim", lambda s, j, stage, token, publication: Claimed(j, "k", {}, time.monotonic())
    )
    monkeypatch.setattr(tasks, "extract", compute)
    monkeypatch.setattr(tasks, "fail", lambda s, j, code, message: failures.append((j, code)))
    result = tasks.extract_features.apply(args=[str(job)])
    assert result.state == "SUCCESS"
    assert attempts == [1]
    assert failures == [(job, code)]


def test_a_failing_job_shows_no_traceback_and_no_path(
    settings: Settings, clean_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug's details (here a real FileNotFoundError naming an install path) stay in the worker log;
    the row says internal_error and the job id to look for. A bad-input message loses its paths."""
    missing = Path(sys.prefix) / "lib" / "no-such-plugin.so"

    def buggy(_settings: Settings, _claimed: Claimed) -> None:
        missing.read_bytes()

    def bad_image(_settings: Settings, _claimed: Claimed) -> None:
        image = missing.with_name("digit.png")
        raise BadImage(f"{image} does not decode\nTraceback (most recent call last):")

    monkeypatch.setattr(tasks, "get_settings", lambda: settings)
    for compute, code in ((buggy, "internal_error"), (bad_image, "bad_image")):
        job = queued_job(clean_db)
        monkeypatch.setattr(tasks, "extract", compute)
        assert tasks.extract_features.apply(args=[str(job)]).state == "SUCCESS"
        row = stored(clean_db, job)
        assert (row.status, row.error_code) == ("failed", code)
        assert row.error_message is not None
        assert "Traceback" not in row.error_message and "/" not in row.error_message, row.error_message
        assert sys.prefix not in row.error_message
        if code == "internal_error":
            assert str(job) in row.error_message and "no-such-plugin" not in row.error_message
        else:
            assert row.error_message == "digit.png does not decode"


def test_the_heartbeat_stamps_a_running_job_until_the_task_ends(
    settings: Settings, clean_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    beats: list[datetime | None] = []
    job = queued_job(clean_db)

    def slow(_settings: Settings, claimed: Claimed) -> None:
        for _ in range(3):
            time.sleep(0.4)
            beats.append(stored(clean_db, claimed.job_id).heartbeat_at)
        raise UnknownDataset("gone")

    quick = settings.model_copy(update={"heartbeat_interval_s": 0.1})
    monkeypatch.setattr(tasks, "get_settings", lambda: quick)
    monkeypatch.setattr(tasks, "extract", slow)
    tasks.extract_features.apply(args=[str(job)])
    assert all(beat is not None for beat in beats)
    assert beats[0] < beats[1] < beats[2]  # type: ignore[operator]
    assert stored(clean_db, job).status == "failed"
