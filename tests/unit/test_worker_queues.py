"""The stage queues: which task goes where, and what ``zootriage worker --queues`` consumes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from zootriage.app.cli import app
from zootriage.app.queue import (
    CPU_QUEUE,
    EXTRACT_TASK,
    GPU_QUEUE,
    MARKERS_TASK,
    celery_config,
    retry_backoff_cap_s,
)
from zootriage.app.settings import Settings


def test_extraction_is_routed_to_gpu_and_markers_to_cpu() -> None:
    config = celery_config(Settings())
    assert config["task_routes"] == {EXTRACT_TASK: {"queue": GPU_QUEUE}, MARKERS_TASK: {"queue": CPU_QUEUE}}
    assert sorted(queue.name for queue in config["task_queues"]) == ["cpu", "gpu"]
    assert config["task_acks_late"] and config["task_reject_on_worker_lost"]


def test_worker_queue_settings() -> None:
    assert Settings().worker_queues == ["gpu", "cpu"]
    assert Settings(worker_queues="cpu").worker_queues == ["cpu"]
    for bad in ("tpu", "gpu,scoring", ""):
        with pytest.raises(ValidationError, match="worker queues"):
            Settings(worker_queues=[q for q in bad.split(",") if q])


@pytest.mark.parametrize(("given", "expected"), [(None, "--queues=gpu,cpu"), ("cpu", "--queues=cpu")])
def test_the_worker_command_passes_its_queues_to_celery(
    monkeypatch: pytest.MonkeyPatch, given: str | None, expected: str
) -> None:
    from zootriage.worker.celery_app import celery_app

    seen: list[list[str]] = []
    monkeypatch.setattr(celery_app, "worker_main", lambda argv: seen.append(argv))
    monkeypatch.delenv("ZOOTRIAGE_WORKER_QUEUES", raising=False)
    result = CliRunner().invoke(app, ["worker", *(["--queues", given] if given else [])])
    assert result.exit_code == 0, result.output
    assert expected in seen[0]


def test_an_unknown_queue_is_refused_before_the_worker_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    from zootriage.worker.celery_app import celery_app

    monkeypatch.setattr(celery_app, "worker_main", lambda argv: pytest.fail("the worker started"))
    result = CliRunner().invoke(app, ["worker", "--queues", "gpu,tpu"])
    assert result.exit_code == 2 and "one or more of gpu, cpu" in result.output


@pytest.mark.parametrize(
    ("visibility", "backoff", "cap"), [(7200, 120, 120), (8, 120, 4), (60, 10, 10), (1, 120, 1)]
)
def test_a_retry_countdown_stays_under_half_the_visibility_timeout(
    visibility: int, backoff: int, cap: int
) -> None:
    settings = Settings(broker_visibility_timeout_s=visibility, job_retry_backoff_max_s=backoff)
    assert retry_backoff_cap_s(settings) == cap
