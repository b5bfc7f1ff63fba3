"""jobs.claimed_by: which delivery of which task holds a running job, so a duplicate delivery of a
live claim (the broker's visibility timeout passing while the job still runs) is told apart

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 21:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("claimed_by", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("claimed_by")
