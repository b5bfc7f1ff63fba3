"""The test databases' own helpers, against the real PostgreSQL."""

from __future__ import annotations

import threading
import time

from sqlalchemy import Engine, create_engine, text

from tests.integration.databases import migrate, scratch_database, wipe_tables
from zootriage.app.db import models


def test_wiping_the_tables_survives_a_deadlock_with_a_late_write() -> None:
    """A stack's late transaction holds a table that the wipe's LOCK TABLE reaches last, then asks for
    one it already holds: PostgreSQL ends the wipe (its deadlock check fires first; the other side's is
    set far later), which must take its locks again and still empty the tables."""
    tables = [table.name for table in models.Base.metadata.sorted_tables]
    first, last = tables[0], tables[-1]
    with scratch_database() as url:
        migrate(url)
        engine = create_engine(url)
        projects = models.Base.metadata.tables["projects"]
        try:
            with engine.begin() as setup:
                setup.execute(projects.insert().values(name="planted"))
            with engine.connect() as late:
                late.execute(text("SET deadlock_timeout = '30s'"))
                late.execute(text(f'SELECT 1 FROM "{last}"'))  # the late write's first table

                outcome: list[BaseException | None] = []

                def wipe() -> None:
                    try:
                        wipe_tables(url)
                        outcome.append(None)
                    except BaseException as error:  # reported by the assertion below
                        outcome.append(error)

                wiper = threading.Thread(target=wipe)
                wiper.start()
                _wait_for_a_lock_wait(engine, "LOCK TABLE")
                late.execute(text(f'SELECT 1 FROM "{first}"'))  # waits on the wipe: the cycle
                late.commit()
                wiper.join(timeout=60)
            assert outcome == [None]
            with engine.connect() as check:
                assert check.scalar(text("SELECT count(*) FROM projects")) == 0
        finally:
            engine.dispose()


def _wait_for_a_lock_wait(engine: Engine, query_start: str) -> None:
    """Until a session of this database whose query starts with ``query_start`` waits for a lock (10 s
    at most; other databases are other processes' tests)."""
    waiting = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND wait_event_type = 'Lock' AND query LIKE :start"
    )
    deadline = time.monotonic() + 10
    with engine.connect() as probe:
        while probe.scalar(waiting, {"start": query_start + "%"}) == 0:
            assert time.monotonic() < deadline, "the wipe never waited for the late write's table"
            probe.rollback()
            time.sleep(0.02)
