"""projects and baseline aliases: every job, gate and alias belongs to a project (existing rows to the
``default`` project), runs join a project through ``project_runs`` (``project_jobs``: the other
projects that joined a job already running, whose run joins them too), an alias names a run in a project
and ``alias_events`` keeps every move of it; API keys may be limited to some projects

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04 09:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
DEFAULT_ID = "(SELECT id FROM projects WHERE name = 'default')"


def _belongs_to_a_project(table: str) -> None:
    """Add ``table.project_id``, put every existing row in the default project, then make it required."""
    op.add_column(table, sa.Column("project_id", BIG_ID, nullable=True))
    op.execute(f"UPDATE {table} SET project_id = {DEFAULT_ID}")
    with op.batch_alter_table(table) as batch:
        batch.alter_column("project_id", existing_type=BIG_ID, nullable=False)
        batch.create_foreign_key(op.f(f"fk_{table}_project_id_projects"), "projects", ["project_id"], ["id"])
        batch.create_index(op.f(f"ix_{table}_project_id"), ["project_id"], unique=False)


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
        sa.UniqueConstraint("name", name=op.f("uq_projects_name")),
    )
    op.execute("INSERT INTO projects (name, created_at) VALUES ('default', CURRENT_TIMESTAMP)")
    _belongs_to_a_project("jobs")
    _belongs_to_a_project("gates")
    op.add_column("gates", sa.Column("baseline_alias", sa.String(length=64), nullable=True))
    op.create_table(
        "project_runs",
        sa.Column("project_id", BIG_ID, nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_project_runs_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_project_runs_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("project_id", "run_id", name=op.f("pk_project_runs")),
    )
    op.create_index(op.f("ix_project_runs_run_id"), "project_runs", ["run_id"], unique=False)
    op.execute(
        "INSERT INTO project_runs (project_id, run_id, created_at) "
        f"SELECT {DEFAULT_ID}, id, created_at FROM runs"
    )
    op.create_table(
        "project_jobs",
        sa.Column("project_id", BIG_ID, nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_project_jobs_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_project_jobs_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("project_id", "job_id", name=op.f("pk_project_jobs")),
    )
    op.create_index(op.f("ix_project_jobs_job_id"), "project_jobs", ["job_id"], unique=False)
    op.create_table(
        "aliases",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("project_id", BIG_ID, nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_aliases_project_id_projects"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_aliases_run_id_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_aliases")),
        sa.UniqueConstraint("project_id", "name", name="uq_aliases_project_id_name"),
    )
    op.create_table(
        "alias_events",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("alias_id", BIG_ID, nullable=False),
        sa.Column("from_run_id", sa.Uuid(), nullable=True),
        sa.Column("to_run_id", sa.Uuid(), nullable=False),
        sa.Column("actor", sa.String(length=128), nullable=True),
        sa.Column("actor_key_id", BIG_ID, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["alias_id"], ["aliases.id"], name=op.f("fk_alias_events_alias_id_aliases"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alias_events")),
    )
    op.create_index(
        "ix_alias_events_alias_id_created_at_id", "alias_events", ["alias_id", "created_at", "id"]
    )
    op.add_column("api_keys", sa.Column("projects", JSON_DOC, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("projects")
    op.drop_index("ix_alias_events_alias_id_created_at_id", table_name="alias_events")
    op.drop_table("alias_events")
    op.drop_table("aliases")
    op.drop_index(op.f("ix_project_jobs_job_id"), table_name="project_jobs")
    op.drop_table("project_jobs")
    op.drop_index(op.f("ix_project_runs_run_id"), table_name="project_runs")
    op.drop_table("project_runs")
    for table in ("gates", "jobs"):
        with op.batch_alter_table(table) as batch:
            if table == "gates":
                batch.drop_column("baseline_alias")
            batch.drop_index(op.f(f"ix_{table}_project_id"))
            batch.drop_constraint(op.f(f"fk_{table}_project_id_projects"), type_="foreignkey")
            batch.drop_column("project_id")
    op.drop_table("projects")
