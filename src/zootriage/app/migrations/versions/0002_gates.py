"""gates: stored CI-gate decisions

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 05:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('gates',
    sa.Column('id', sa.Uuid(), nullable=False),
    sa.Column('candidate_run_id', sa.Uuid(), nullable=True),
    sa.Column('baseline_run_id', sa.Uuid(), nullable=True),
    sa.Column('candidate', JSON_DOC, nullable=False),
    sa.Column('baseline', JSON_DOC, nullable=False),
    sa.Column('dataset', JSON_DOC, nullable=False),
    sa.Column('rules', JSON_DOC, nullable=False),
    sa.Column('outcomes', JSON_DOC, nullable=False),
    sa.Column('passed', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['baseline_run_id'], ['runs.id'], name=op.f('fk_gates_baseline_run_id_runs'),
                            ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['candidate_run_id'], ['runs.id'], name=op.f('fk_gates_candidate_run_id_runs'),
                            ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_gates'))
    )
    op.create_index('ix_gates_created_at_id', 'gates', ['created_at', 'id'], unique=False)
    op.create_index(op.f('ix_gates_passed'), 'gates', ['passed'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_gates_passed'), table_name='gates')
    op.drop_index('ix_gates_created_at_id', table_name='gates')
    op.drop_table('gates')
