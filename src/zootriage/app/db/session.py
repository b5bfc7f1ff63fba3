"""Engines and sessions, one engine per database URL per process."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

# Connections one process may hold. The API admits at most this many database users at once (its
# limiter is sized from it), so a request never queues inside the pool for long; POOL_TIMEOUT_S is
# kept short so that a wait that does happen ends as a 503, not a hung client.
POOL_SIZE = 10
POOL_OVERFLOW = 20
POOL_CAPACITY = POOL_SIZE + POOL_OVERFLOW
POOL_TIMEOUT_S = 3.0
_POOL = {"pool_size": POOL_SIZE, "max_overflow": POOL_OVERFLOW, "pool_timeout": POOL_TIMEOUT_S}


@lru_cache(maxsize=8)
def get_engine(url: str) -> Engine:
    """Create the engine for ``url``; SQLite gets WAL and a busy timeout so API and worker can share it."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, **_POOL)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        return engine
    # A short connect timeout makes an unreachable database a quick 503, not a hung request.
    return create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": 3}, **_POOL)


def get_sessionmaker(url: str) -> sessionmaker[Session]:
    """Sessions on ``get_engine(url)``'s pool, always the engine that call returns now: two caches
    keyed by the URL could disagree once one of them evicted it (more than eight URLs in one process,
    as in the test session), and sessions would then draw from a pool nobody else sees."""
    return _sessionmaker_of(get_engine(url))


@lru_cache(maxsize=8)
def _sessionmaker_of(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """One transaction: committed when the block succeeds, rolled back when it raises."""
    session = get_sessionmaker(url)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
