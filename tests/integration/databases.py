"""Throwaway PostgreSQL databases for tests; an unreachable server is an error, never a skip."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from alembic import command
from alembic.config import Config
from psycopg.errors import DeadlockDetected
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, OperationalError

from tests.integration.servers import RedisServer
from zootriage.app.db import models
from zootriage.app.db.session import session_scope

ADMIN_URL = os.environ.get(
    "ZOOTRIAGE_TEST_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
# A Redis named here is used as it is (never flushed); else each test session starts its own.
EXTERNAL_REDIS_URL = os.environ.get("ZOOTRIAGE_TEST_REDIS_URL")


@contextmanager
def scratch_database() -> Iterator[str]:
    """Create an empty database, yield its URL, drop it afterwards (connections included)."""
    name = f"zt_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
        # A commit need not wait for its WAL to reach the disk (each wait is ~10 ms here, and a test
        # makes dozens); a crash of the server could lose the last commits, never corrupt anything.
        conn.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
    try:
        yield make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def wipe_tables(url: str) -> None:
    """Empty every table of the models (the metadata's list, so a new table is never forgotten) as
    ``TRUNCATE ... RESTART IDENTITY`` would, in one transaction; the migration bookkeeping
    (alembic_version) stays.

    The same locks as a TRUNCATE (ACCESS EXCLUSIVE on every table, taken at once: a stack's half-done
    write finishes first, none starts until the tables are empty), then a DELETE per table, dependants
    first, and every used sequence set back to 1. A TRUNCATE gives each table and index new files and
    syncs them: 0.8 s for these tables on this machine, twice per test (``clean_db``); the DELETEs of
    a test's few rows take milliseconds. Should the DELETEs ever trip on a foreign key (a cycle between
    tables has no dependants-first order), the TRUNCATE does it."""
    for attempt in range(5):
        try:
            _wipe(url)
            return
        except OperationalError as error:
            # PostgreSQL ends one side of a lock cycle (a stack's late write holding one table while
            # it waits for another that the LOCK TABLE already holds): the wipe's whole transaction
            # rolled back, so it is simply taken again, now that the other side has finished.
            if not isinstance(error.orig, DeadlockDetected) or attempt == 4:
                raise


def _wipe(url: str) -> None:
    tables = models.Base.metadata.sorted_tables
    names = ", ".join(f'"{table.name}"' for table in tables)
    try:
        with session_scope(url) as session:
            session.execute(text(f"LOCK TABLE {names} IN ACCESS EXCLUSIVE MODE"))
            for table in reversed(tables):
                session.execute(table.delete())
            used = "SELECT format('%I.%I', schemaname, sequencename) FROM pg_sequences WHERE last_value > 0"
            for sequence in list(session.scalars(text(used))):
                session.execute(text("SELECT setval(CAST(:name AS regclass), 1, false)"), {"name": sequence})
    except IntegrityError:
        with session_scope(url) as session:
            session.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))


def alembic_config(url: str) -> Config:
    config = Config(os.path.join(os.path.dirname(__file__), "..", "..", "alembic.ini"))
    config.attributes["url"] = url
    config.attributes["configure_logger"] = False
    return config


def migrate(url: str) -> None:
    command.upgrade(alembic_config(url), "head")


@contextmanager
def running_job_database() -> Iterator[tuple[str, uuid.UUID]]:
    """A migrated scratch database holding one job in the ``running`` state: its URL and the job's id."""
    with scratch_database() as url:
        migrate(url)
        job = models.Job(request_key=uuid.uuid4().hex, request={}, request_hash="0" * 64,
                         status=models.JobStatus.running.value, attempts=1)
        with session_scope(url) as session:
            session.add(job)
        yield url, job.id


@contextmanager
def private_redis() -> Iterator[str]:
    """A redis-server of this test session on a free loopback port, keeping nothing on disk; its URL
    has no database number. Stopped (and its folder removed) afterwards."""
    if EXTERNAL_REDIS_URL:
        yield EXTERNAL_REDIS_URL.rstrip("/")
        return
    server = RedisServer()
    try:
        server.start()
        yield server.url
    finally:
        server.remove()
