"""The Alembic chain builds the schema from nothing, and it is exactly the schema the models declare."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from tests.integration.databases import migrate, scratch_database
from zootriage.app.db.base import Base


def _diff(url: str) -> list[object]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


def test_upgrade_head_on_postgresql_matches_the_models() -> None:
    with scratch_database() as url:
        migrate(url)
        engine = create_engine(url)
        tables = set(inspect(engine).get_table_names())
        engine.dispose()
        assert {"checkpoints", "jobs", "runs", "markers", "api_keys"} <= tables
        assert _diff(url) == []


def test_upgrade_head_on_sqlite_matches_the_models(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'z.db'}"
    migrate(url)
    assert _diff(url) == []
