"""sweeps: one request scoring many models; jobs know their sweep and when they were published

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 22:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=True),
        sa.Column("tags", JSON_DOC, server_default=sa.text("'{}'"), nullable=False),
        sa.Column("selection", JSON_DOC, nullable=False),
        sa.Column("dataset", JSON_DOC, nullable=False),
        sa.Column("sampling", JSON_DOC, nullable=False),
        sa.Column("protocol", JSON_DOC, nullable=False),
        sa.Column("rule", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("cancelled_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sweeps")),
    )
    op.create_index("ix_sweeps_created_at_id", "sweeps", ["created_at", "id"], unique=False)
    op.create_table(
        "sweep_members",
        sa.Column("sweep_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("model", JSON_DOC, nullable=False),
        sa.Column("label", sa.String(length=128), nullable=True),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.ForeignKeyConstraint(
            ["sweep_id"], ["sweeps.id"], name=op.f("fk_sweep_members_sweep_id_sweeps"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_sweep_members_job_id_jobs"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_sweep_members_run_id_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("sweep_id", "position", name=op.f("pk_sweep_members")),
    )
    op.create_index(op.f("ix_sweep_members_job_id"), "sweep_members", ["job_id"], unique=False)
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("sweep_id", sa.Uuid(), nullable=True))
        batch.add_column(sa.Column("published_at", sa.DateTime(timezone=True), nullable=True))
        batch.create_foreign_key(
            op.f("fk_jobs_sweep_id_sweeps"), "sweeps", ["sweep_id"], ["id"], ondelete="SET NULL"
        )
        batch.create_index(op.f("ix_jobs_sweep_id"), ["sweep_id"], unique=False)
    # Every job before sweeps was published when it was created.
    op.execute("UPDATE jobs SET published_at = created_at")


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index(op.f("ix_jobs_sweep_id"))
        batch.drop_constraint(op.f("fk_jobs_sweep_id_sweeps"), type_="foreignkey")
        batch.drop_column("published_at")
        batch.drop_column("sweep_id")
    op.drop_index(op.f("ix_sweep_members_job_id"), table_name="sweep_members")
    op.drop_table("sweep_members")
    op.drop_index("ix_sweeps_created_at_id", table_name="sweeps")
    op.drop_table("sweeps")
