"""The running stacks (uvicorn, Celery worker, the session's Redis and PostgreSQL) that the modules in
this folder share: ``stack``, ``triage_stack`` and ``api_only_stack``, each started once per session.

Only modules here can ask for them, and ``make test`` hands this whole folder to one xdist process
(``tests/conftest.py``'s scheduler), so each stack starts once per run rather than once per process:
a stack's start (an API, a worker importing torch, its two warm children) is about 20 s of CPU.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.stack import Stack, TriageStack, start_stack, start_triage_stack
from zootriage.app.settings import Settings


@pytest.fixture(scope="session")
def stack(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """uvicorn + one Celery worker process for the whole session. Redis hands a dead worker's job to
    the next worker after the visibility timeout, kept short here so the kill test stays quick. The
    worker has the test pause at ``extract:mid``, open unless a test closes it (``Stack.paused``). It
    keeps two warm children: on 2 cores a replacement starts only when the job's child is closed, so
    with one, nearly every test's job waited for a child's start (test_stack.py 101 s -> 93 s)."""
    running = start_stack(
        settings, tmp_path_factory.mktemp("logs"), pausable=True, ZOOTRIAGE_BROKER_VISIBILITY_TIMEOUT_S="8",
        ZOOTRIAGE_WARM_CHILDREN="2",
    )
    yield running
    running.stop()


@pytest.fixture(scope="session")
def api_only_stack(
    settings: Settings, redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """uvicorn alone, no worker, for the session: the one real HTTP server of the modules that need one
    but no worker of their own (each API start imports torch: seconds of CPU). Its broker is Redis
    database 12, which no worker consumes: a job it queues stays queued. Its upload limit is 64 MB, so
    that a flood of small form fields fits under it (test_body_limits), and its torch hub cache is a
    folder of its own (``env["TORCH_HOME"]``) where a module may place files."""
    torch_home = tmp_path_factory.mktemp("api-only-torch-home")
    running = start_stack(
        settings,
        tmp_path_factory.mktemp("api-only-logs"),
        worker=False,
        ZOOTRIAGE_BROKER_URL=f"{redis_server}/12",
        ZOOTRIAGE_UPLOAD_LIMIT_BYTES=str(64 * 1024 * 1024),
        TORCH_HOME=str(torch_home),
    )
    yield running
    running.stop()


@pytest.fixture(scope="session")
def triage_stack(
    settings: Settings, redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TriageStack]:
    """The stack of the ranking, recommendation and command-line tests (see ``start_triage_stack``)."""
    running = start_triage_stack(settings, redis_server, tmp_path_factory.mktemp("triage"))
    yield running
    running.stack.stop()
