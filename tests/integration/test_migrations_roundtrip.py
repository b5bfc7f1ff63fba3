"""Every migration is reversible: on PostgreSQL and SQLite the chain goes up to head, down to base and up
again, and the schema it leaves is exactly the models' (alembic's ``compare_metadata`` finds nothing).
Rows written before projects existed (0012) land in the default project at 0013."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from tests.integration.databases import alembic_config, scratch_database
from zootriage.app.db.base import Base


def _diff(url: str) -> list[object]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


@pytest.fixture(params=["postgresql", "sqlite"])
def empty_database(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'roundtrip.db'}"
        return
    with scratch_database() as url:
        yield url


def test_up_down_up_leaves_the_models_schema(empty_database: str) -> None:
    config = alembic_config(empty_database)
    command.upgrade(config, "head")
    assert _diff(empty_database) == []
    command.downgrade(config, "base")
    assert _tables(empty_database) == set()
    command.upgrade(config, "head")
    assert _diff(empty_database) == []


def test_rows_from_before_projects_join_the_default_project(empty_database: str) -> None:
    config = alembic_config(empty_database)
    command.upgrade(config, "0012")
    run_id, job_id, gate_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    hexed = {"run": run_id, "job": job_id, "gate": gate_id}
    ids = {k: (v.hex if empty_database.startswith("sqlite") else str(v)) for k, v in hexed.items()}
    now = datetime.now(UTC).isoformat()
    engine = create_engine(empty_database)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO runs (id, run_key, model_ref, weights_sha256, dataset_ref, dataset_fingerprint, "
                "sampling, protocol, model_meta, code_version, device, n_images, timings, created_at) VALUES "
                "(:id, 'k', '{}', 'w', '{}', 'f', '{}', '{}', '{}', 'c', 'cpu', 1, '{}', :now)"
            ),
            {"id": ids["run"], "now": now},
        )
        conn.execute(
            text(
                "INSERT INTO jobs (id, status, request_key, request, request_hash, done, total, attempts, "
                "created_at, run_id) VALUES (:id, 'succeeded', 'r', '{}', 'h', 0, 0, 0, :now, :run)"
            ),
            {"id": ids["job"], "now": now, "run": ids["run"]},
        )
        conn.execute(
            text(
                "INSERT INTO gates (id, candidate, baseline, dataset, rules, outcomes, passed, status, "
                "created_at) VALUES (:id, '{}', '{}', '{}', '[]', '[]', true, 'passed', :now)"
            ),
            {"id": ids["gate"], "now": now},
        )
    command.upgrade(config, "0013")
    with engine.connect() as conn:
        default = conn.execute(text("SELECT id FROM projects WHERE name = 'default'")).scalar_one()
        assert conn.execute(text("SELECT project_id FROM jobs")).scalar_one() == default
        assert conn.execute(text("SELECT project_id FROM gates")).scalar_one() == default
        assert conn.execute(text("SELECT project_id FROM project_runs")).scalar_one() == default
    command.downgrade(config, "0012")
    with engine.connect() as conn:  # the rows survive the way back
        assert conn.execute(text("SELECT count(*) FROM jobs")).scalar_one() == 1
        assert conn.execute(text("SELECT count(*) FROM gates")).scalar_one() == 1
    engine.dispose()
