"""Fixtures against the real PostgreSQL and Redis of the machine; unreachable means failed, not skipped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import delete

from app.db.models import ApiKey, Checkpoint, Job, Marker, Run
from app.db.session import session_scope
from app.main import create_app
from app.settings import Settings
from tests.integration.databases import REDIS_URL, migrate, scratch_database


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A Redis database of its own (db 7), flushed; Redis down is a test failure."""
    url = f"{REDIS_URL}/7"
    client = redis.Redis.from_url(url, socket_connect_timeout=3)
    client.ping()
    client.flushdb()
    return url


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
    """Each test that writes starts from empty tables."""

    def wipe() -> None:
        with session_scope(database_url) as session:
            for table in (Marker, Job, Run, Checkpoint, ApiKey):
                session.execute(delete(table))

    wipe()
    yield database_url
    wipe()


@pytest.fixture
def client(settings: Settings, clean_db: str) -> Iterator[TestClient]:
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client
