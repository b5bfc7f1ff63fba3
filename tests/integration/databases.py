"""Throwaway PostgreSQL databases for tests; an unreachable server is an error, never a skip."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ADMIN_URL = os.environ.get(
    "ZOOTRIAGE_TEST_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("ZOOTRIAGE_TEST_REDIS_URL", "redis://127.0.0.1:6379")


@contextmanager
def scratch_database() -> Iterator[str]:
    """Create an empty database, yield its URL, drop it afterwards (connections included)."""
    name = f"zt_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def alembic_config(url: str) -> Config:
    config = Config(os.path.join(os.path.dirname(__file__), "..", "..", "alembic.ini"))
    config.attributes["url"] = url
    config.attributes["configure_logger"] = False
    return config


def migrate(url: str) -> None:
    command.upgrade(alembic_config(url), "head")
