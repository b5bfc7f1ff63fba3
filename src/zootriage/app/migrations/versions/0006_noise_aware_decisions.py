"""noise-aware decisions: markers.decidable and gates.status

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 15:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('markers', sa.Column('decidable', sa.Boolean(), server_default=sa.true(), nullable=False))
    op.add_column('gates', sa.Column('status', sa.String(length=16), nullable=True))
    op.execute("UPDATE gates SET status = CASE WHEN passed THEN 'passed' ELSE 'failed' END")
    with op.batch_alter_table('gates') as batch:
        batch.alter_column('status', existing_type=sa.String(length=16), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table('gates') as batch:
        batch.drop_column('status')
    with op.batch_alter_table('markers') as batch:
        batch.drop_column('decidable')
