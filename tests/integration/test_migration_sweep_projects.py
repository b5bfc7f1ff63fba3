"""Migration 0015 gives every sweep the project it was created in, on PostgreSQL and SQLite: the project of
its own jobs; with none, the project its first member joined (the project that joined another
project's active job, not that job's own project; the project that took a stored run in when the sweep
was made); with no member left, the default project. Down again, the column goes and the sweeps stay."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine, inspect, text

from tests.integration.databases import alembic_config, scratch_database

WHEN = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)


@pytest.fixture(params=["postgresql", "sqlite"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sweeps.db'}"
        return
    with scratch_database() as url:
        yield url


class Rows:
    """Raw inserts into a 0014 schema (ids as each backend stores a UUID)."""

    def __init__(self, conn: Connection, sqlite: bool) -> None:
        self.conn, self.sqlite = conn, sqlite

    def uid(self, value: uuid.UUID) -> str:
        return value.hex if self.sqlite else str(value)

    def project(self, name: str) -> int:
        if name != "default":
            insert = text("INSERT INTO projects (name, created_at) VALUES (:name, :now)")
            self.conn.execute(insert, {"name": name, "now": str(WHEN)})
        found = self.conn.execute(text("SELECT id FROM projects WHERE name = :n"), {"n": name})
        return int(found.scalar_one())

    def sweep(self) -> uuid.UUID:
        made = uuid.uuid4()
        self.conn.execute(
            text(
                "INSERT INTO sweeps (id, selection, dataset, sampling, protocol, rule, created_at) "
                "VALUES (:id, '{}', '{}', '{}', '{}', 'geometry', :now)"
            ),
            {"id": self.uid(made), "now": str(WHEN)},
        )
        return made

    def job(self, project_id: int, sweep_id: uuid.UUID | None) -> uuid.UUID:
        made = uuid.uuid4()
        self.conn.execute(
            text(
                "INSERT INTO jobs (id, status, request_key, request, request_hash, done, total, attempts, "
                "created_at, project_id, sweep_id) VALUES (:id, 'queued', :key, '{}', 'h', 0, 0, 0, :now, "
                ":project, :sweep)"
            ),
            {
                "id": self.uid(made),
                "key": made.hex,
                "now": str(WHEN),
                "project": project_id,
                "sweep": self.uid(sweep_id) if sweep_id is not None else None,
            },
        )
        return made

    def run(self) -> uuid.UUID:
        made = uuid.uuid4()
        self.conn.execute(
            text(
                "INSERT INTO runs (id, run_key, model_ref, weights_sha256, dataset_ref, dataset_fingerprint, "
                "sampling, protocol, model_meta, code_version, device, n_images, timings, created_at) VALUES "
                "(:id, :key, '{}', 'w', '{}', 'f', '{}', '{}', '{}', 'c', 'cpu', 1, '{}', :now)"
            ),
            {"id": self.uid(made), "key": made.hex, "now": str(WHEN)},
        )
        return made

    def member(self, sweep: uuid.UUID, position: int, job: uuid.UUID | None, run: uuid.UUID | None) -> None:
        self.conn.execute(
            text(
                "INSERT INTO sweep_members (sweep_id, position, model, job_id, run_id) "
                "VALUES (:sweep, :position, '{}', :job, :run)"
            ),
            {
                "sweep": self.uid(sweep),
                "position": position,
                "job": self.uid(job) if job is not None else None,
                "run": self.uid(run) if run is not None else None,
            },
        )

    def joins_job(self, project_id: int, job_id: uuid.UUID) -> None:
        self.conn.execute(
            text("INSERT INTO project_jobs (project_id, job_id) VALUES (:p, :j)"),
            {"p": project_id, "j": self.uid(job_id)},
        )

    def joins_run(self, project_id: int, run_id: uuid.UUID, at: datetime) -> None:
        self.conn.execute(
            text("INSERT INTO project_runs (project_id, run_id, created_at) VALUES (:p, :r, :at)"),
            {"p": project_id, "r": self.uid(run_id), "at": str(at)},
        )


def _sweep_projects(conn: Connection) -> dict[str, str]:
    """Each sweep's id (32 hex digits) and the name of its project."""
    rows = conn.execute(text("SELECT s.id, p.name FROM sweeps s JOIN projects p ON p.id = s.project_id"))
    return {str(row[0]).replace("-", ""): str(row[1]) for row in rows}


def test_0015_puts_each_sweep_in_the_project_it_was_created_in(empty_database: str) -> None:
    config = alembic_config(empty_database)
    command.upgrade(config, "0014")
    engine = create_engine(empty_database)
    with engine.begin() as conn:
        rows = Rows(conn, empty_database.startswith("sqlite"))
        default, vision, audio = rows.project("default"), rows.project("vision"), rows.project("audio")
        # vision's sweep, with its own job.
        own = rows.sweep()
        vision_job = rows.job(vision, own)
        rows.member(own, 0, vision_job, None)
        # audio's sweep, whose one model joined vision's active job: no job of its own.
        joined = rows.sweep()
        rows.joins_job(audio, vision_job)
        rows.member(joined, 0, vision_job, None)
        # audio's sweep answered by a stored run of the default project (its first member's job deleted);
        # vision took the run in later.
        stored = rows.sweep()
        run = rows.run()
        rows.joins_run(default, run, WHEN - timedelta(days=1))
        rows.joins_run(audio, run, WHEN + timedelta(seconds=1))
        rows.joins_run(vision, run, WHEN + timedelta(hours=1))
        rows.member(stored, 0, None, None)
        rows.member(stored, 1, None, run)
        # A sweep with no member left at all.
        bare = rows.sweep()
    command.upgrade(config, "0015")
    with engine.connect() as conn:
        assert _sweep_projects(conn) == {
            own.hex: "vision",
            joined.hex: "audio",
            stored.hex: "audio",
            bare.hex: "default",
        }
    column = next(c for c in inspect(engine).get_columns("sweeps") if c["name"] == "project_id")
    assert column["nullable"] is False

    command.downgrade(config, "0014")
    assert "project_id" not in {c["name"] for c in inspect(engine).get_columns("sweeps")}
    with engine.connect() as conn:  # the sweeps survive the way back
        assert conn.execute(text("SELECT count(*) FROM sweeps")).scalar_one() == 4
    engine.dispose()


def test_0015_makes_the_default_project_again_when_a_sweep_needs_it(empty_database: str) -> None:
    config = alembic_config(empty_database)
    command.upgrade(config, "0014")
    engine = create_engine(empty_database)
    with engine.begin() as conn:
        rows = Rows(conn, empty_database.startswith("sqlite"))
        conn.execute(text("DELETE FROM projects WHERE name = 'default'"))
        bare = rows.sweep()
    command.upgrade(config, "0015")
    with engine.connect() as conn:
        assert _sweep_projects(conn) == {bare.hex: "default"}
    engine.dispose()


def test_0015_follows_0014() -> None:
    revision = ScriptDirectory.from_config(alembic_config("sqlite://")).get_revision("0015")
    assert revision is not None and revision.down_revision == "0014"
