"""run management: a run's free-text description, and when it was archived (hidden from listings,
stored-run recommendations and trends; never deleted); the indexes the job and upload lists page by

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("description", sa.Text(), nullable=True))
    op.add_column("runs", sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index(op.f("ix_runs_archived_at"), "runs", ["archived_at"], unique=False)
    op.create_index("ix_jobs_created_at_id", "jobs", ["created_at", "id"], unique=False)
    op.create_index("ix_checkpoints_created_at_sha256", "checkpoints", ["created_at", "sha256"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_checkpoints_created_at_sha256", table_name="checkpoints")
    op.drop_index("ix_jobs_created_at_id", table_name="jobs")
    op.drop_index(op.f("ix_runs_archived_at"), table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("archived_at")
        batch.drop_column("description")
