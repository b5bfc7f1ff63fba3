"""Migration 0014 (a run's description and archive time; the job and upload list indexes) goes up and
down on PostgreSQL and SQLite, and a run stored before it, or archived and described after it, is kept
through both directions: nothing but the two columns comes and goes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from tests.integration.databases import alembic_config, migrate, scratch_database
from tests.integration.stored_runs import stored_run
from zootriage.app.db.models import Run
from zootriage.app.db.session import session_scope

NEW_COLUMNS = {"description", "archived_at"}


def _shape(url: str) -> tuple[set[str], set[str], set[str]]:
    engine = create_engine(url)
    try:
        found = inspect(engine)
        columns = {column["name"] for column in found.get_columns("runs")}
        tables = ("runs", "jobs", "checkpoints")
        indexes = {index["name"] for table in tables for index in found.get_indexes(table)}
        with engine.connect() as conn:
            ids = {str(row[0]).replace("-", "") for row in conn.execute(text("SELECT id FROM runs"))}
        return columns, {str(name) for name in indexes}, ids
    finally:
        engine.dispose()


def _round_trip(url: str) -> None:
    migrate(url)
    run_id = stored_run(url, "through-0014", {"dimension": 2.0}, fingerprint="f" * 64)
    with session_scope(url) as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.description, run.archived_at = "kept?", datetime(2026, 12, 4, tzinfo=UTC)
    columns, indexes, ids = _shape(url)
    assert columns >= NEW_COLUMNS and run_id.hex in ids
    assert {"ix_runs_archived_at", "ix_jobs_created_at_id", "ix_checkpoints_created_at_sha256"} <= indexes

    command.downgrade(alembic_config(url), "0013")
    columns, indexes, ids = _shape(url)
    assert not NEW_COLUMNS & columns and {"name", "run_key", "created_at"} <= columns
    assert not {"ix_runs_archived_at", "ix_jobs_created_at_id", "ix_checkpoints_created_at_sha256"} & indexes
    assert run_id.hex in ids  # the run itself survives the downgrade

    migrate(url)
    with session_scope(url) as session:
        run = session.get(Run, run_id)
        assert run is not None and (run.description, run.archived_at) == (None, None)  # not archived again


def test_0014_round_trips_on_postgresql() -> None:
    with scratch_database() as url:
        _round_trip(url)


def test_0014_round_trips_on_sqlite(tmp_path: Path) -> None:
    _round_trip(f"sqlite:///{tmp_path / 'z.db'}")


def test_0014_follows_0013() -> None:
    revision = ScriptDirectory.from_config(alembic_config("sqlite://")).get_revision("0014")
    assert revision is not None and revision.down_revision == "0013"
