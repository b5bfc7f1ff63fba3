"""names and tags: checkpoints, jobs and runs carry a name and tags, gates their sides' labels;
uploads carry preprocessing and a label space

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 16:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_DOC = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    for table in ('checkpoints', 'jobs'):
        op.add_column(table, sa.Column('name', sa.String(length=128), nullable=True))
        op.add_column(table, sa.Column('tags', JSON_DOC, server_default=sa.text("'{}'"), nullable=False))
    op.add_column('checkpoints', sa.Column('preprocess', JSON_DOC, nullable=True))
    op.add_column('checkpoints', sa.Column('label_space', sa.String(length=64), nullable=True))
    op.add_column('runs', sa.Column('name', sa.String(length=128), nullable=True))
    op.create_index(op.f('ix_runs_name'), 'runs', ['name'], unique=False)
    op.create_table(
        'run_tags',
        sa.Column('id', BIG_ID, autoincrement=True, nullable=False),
        sa.Column('run_id', sa.Uuid(), nullable=False),
        sa.Column('key', sa.String(length=32), nullable=False),
        sa.Column('value', sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_run_tags_run_id_runs'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_run_tags')),
        sa.UniqueConstraint('run_id', 'key', name='uq_run_tags_run_id_key'),
    )
    op.create_index('ix_run_tags_key_value_run_id', 'run_tags', ['key', 'value', 'run_id'], unique=False)
    op.add_column('gates', sa.Column('candidate_label', sa.String(length=255), nullable=True))
    op.add_column('gates', sa.Column('baseline_label', sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('gates') as batch:
        batch.drop_column('baseline_label')
        batch.drop_column('candidate_label')
    op.drop_index('ix_run_tags_key_value_run_id', table_name='run_tags')
    op.drop_table('run_tags')
    op.drop_index(op.f('ix_runs_name'), table_name='runs')
    with op.batch_alter_table('runs') as batch:
        batch.drop_column('name')
    with op.batch_alter_table('checkpoints') as batch:
        batch.drop_column('label_space')
        batch.drop_column('preprocess')
    for table in ('jobs', 'checkpoints'):
        with op.batch_alter_table(table) as batch:
            batch.drop_column('tags')
            batch.drop_column('name')
