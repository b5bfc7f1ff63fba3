"""jobs.publication: the number of the job's latest published message, so a stale copy of an earlier
one (the broker handing out an unacked message again after a hand-over or a requeue) is dropped

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03 14:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("publication", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("publication")
