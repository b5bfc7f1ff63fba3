"""Fixtures against the real PostgreSQL and Redis of the machine; unreachable means failed, not skipped.

Expensive things (the database, Redis) are made once per session (once per xdist process); the running
stacks are fixtures of ``stacks/`` only (see its conftest); every test that writes starts from empty tables
(``clean_db``, milliseconds: see ``wipe_tables``) and creates what it asserts on.
Every test under tests/integration gets the ``integration`` marker here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import delete

from tests.integration.databases import migrate, private_redis, scratch_database, wipe_tables
from tests.integration.models import export_mnist_cnn
from tests.integration.stack import STARTED
from zootriage.app.db.models import Gate
from zootriage.app.db.session import session_scope
from zootriage.app.main import create_app
from zootriage.app.settings import Settings

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.integration)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How many API and worker processes the tests started (``stack.STARTED``; not shown under xdist,
    whose processes count their own)."""
    if STARTED:
        counts = ", ".join(f"{count} {kind}" for kind, count in sorted(STARTED.items()))
        terminalreporter.write_line(f"stack processes started: {counts}")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """This session's own redis-server (or the one ZOOTRIAGE_TEST_REDIS_URL names, never flushed)."""
    with private_redis() as url:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
        yield url


@pytest.fixture(scope="session")
def redis_url(redis_server: str) -> str:
    """Database 7 of the session's Redis: the broker of the main stack."""
    return f"{redis_server}/7"


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    with scratch_database() as url:
        migrate(url)
        yield url


@pytest.fixture(scope="session")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("state")


@pytest.fixture(scope="session")
def settings(database_url: str, redis_url: str, state_dir: Path) -> Settings:
    return Settings(
        state_dir=state_dir,
        database_url=database_url,
        broker_url=redis_url,
        data_roots=[state_dir / "data"],
        upload_limit_bytes=2 * 1024 * 1024,
        page_size_max=100,
    )


@pytest.fixture
def clean_db(database_url: str) -> Iterator[str]:
    """Each test that writes starts from empty tables (every table, see ``wipe_tables``)."""
    wipe_tables(database_url)
    yield database_url
    wipe_tables(database_url)


@pytest.fixture
def client(settings: Settings, clean_db: str) -> Iterator[TestClient]:
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def mnist_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_mnist_cnn(tmp_path_factory.mktemp("models"))


@pytest.fixture
def program_ref(client: TestClient, mnist_program: Path) -> dict[str, Any]:
    """The real MNIST program uploaded through the API, as a job's model reference."""
    uploaded = client.post("/v1/checkpoints", files={"file": ("m.pt2", mnist_program.read_bytes())})
    return {"source": "checkpoint", "path": uploaded.json()["model_path"]}


@pytest.fixture
def api(
    client: TestClient, database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[TestClient]:
    """An empty TORCH_HOME: no torchvision weights are available, so nothing real is ever scored here."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with session_scope(database_url) as session:
        session.execute(delete(Gate))
    yield client
    with session_scope(database_url) as session:
        session.execute(delete(Gate))
