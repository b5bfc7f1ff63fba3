"""page_sessions: server-side logins of the web pages (the cookie holds a random token, no longer the
API key itself), ended by logging out, by their expiry or by revoking their key

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 06:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "page_sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_page_sessions")),
    )
    op.create_index(op.f("ix_page_sessions_key_hash"), "page_sessions", ["key_hash"], unique=False)
    op.create_index(op.f("ix_page_sessions_expires_at"), "page_sessions", ["expires_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_page_sessions_expires_at"), table_name="page_sessions")
    op.drop_index(op.f("ix_page_sessions_key_hash"), table_name="page_sessions")
    op.drop_table("page_sessions")
