"""api key scopes: what a key may do, when it was last used, when it was revoked

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 14:45:00.000000

Keys stored before scopes existed were write keys (reads were open), so they become read + write.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')
EXISTING_KEYS_SCOPES = '["read", "write"]'


def upgrade() -> None:
    with op.batch_alter_table('api_keys') as batch:
        batch.add_column(sa.Column('scopes', JSON_DOC, nullable=False,
                                   server_default=sa.text(f"'{EXISTING_KEYS_SCOPES}'")))
        batch.add_column(sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True))
    # The default only fills the rows that existed; new keys always name their scopes.
    with op.batch_alter_table('api_keys') as batch:
        batch.alter_column('scopes', server_default=None)


def downgrade() -> None:
    with op.batch_alter_table('api_keys') as batch:
        batch.drop_column('revoked_at')
        batch.drop_column('last_used_at')
        batch.drop_column('scopes')
