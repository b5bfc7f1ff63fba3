"""A worker process that takes extraction jobs starts its warm children when it starts, not at its
first job (``worker.warm.start_early``, called from Celery's ``worker_process_init``)."""

from __future__ import annotations

import logging

import pytest

from zootriage.app.settings import Settings
from zootriage.worker import celery_app, warm


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """The settings each pool start was asked with (the pool itself is not started here)."""
    calls: list[Settings] = []
    monkeypatch.setattr(warm, "children", lambda settings: calls.append(settings))
    return calls


@pytest.mark.parametrize(
    ("queues", "expected"), [({"gpu", "cpu"}, 1), ({"gpu"}, 1), ({"cpu"}, 0), (set(), 0)]
)
def test_only_an_extraction_worker_starts_children_early(
    started: list[Settings], queues: set[str], expected: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=warm.__name__):
        warm.start_early(Settings(), queues)
    assert len(started) == expected
    said = [r.getMessage() for r in caplog.records if "process's start" in r.getMessage()]
    assert said == ["starting 1 warm children at the process's start"] * expected


def test_a_worker_without_a_pool_starts_none_early(started: list[Settings]) -> None:
    warm.start_early(Settings(warm_children=0), {"gpu"})
    assert started == []


def test_the_pool_process_start_reads_the_queues_the_worker_consumes(
    started: list[Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_prepare_child`` passes Celery's selected queues (``-Q cpu`` leaves ``gpu`` out)."""
    monkeypatch.setattr(celery_app, "prepare_pool_child", lambda settings: None)
    queues = celery_app.celery_app.amqp.queues
    monkeypatch.setattr(queues, "_consume_from", None)
    celery_app._prepare_child()
    assert len(started) == 1  # every queue by default, extraction included
    queues.select(["cpu"])
    celery_app._prepare_child()
    assert len(started) == 1
