"""job stages: the extraction record a GPU worker hands to the marker stage, and the extraction key
that lets a new job start from another job's features

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.add_column("jobs", sa.Column("features", JSON_DOC, nullable=True))
    op.add_column("jobs", sa.Column("extraction_key", sa.String(length=64), nullable=True))
    op.create_index(op.f("ix_jobs_extraction_key"), "jobs", ["extraction_key"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_jobs_extraction_key"), table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("extraction_key")
        batch.drop_column("features")
