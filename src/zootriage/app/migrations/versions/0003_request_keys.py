"""request keys: jobs and runs found by the normalised request, the run key computed by the worker

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 14:45:00.000000

Existing jobs get their run key as request key: it matches no new request, so they are simply not
reused by request; their runs stay reachable by run key, and the worker links new jobs to them.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVE = sa.text("status IN ('queued', 'running')")


def upgrade() -> None:
    op.add_column('runs', sa.Column('request_key', sa.String(length=64), nullable=True))
    op.create_index(op.f('ix_runs_request_key'), 'runs', ['request_key'], unique=False)
    op.add_column('jobs', sa.Column('request_key', sa.String(length=64), nullable=True))
    op.execute("UPDATE jobs SET request_key = run_key")
    op.drop_index('uq_jobs_active_run_key', table_name='jobs', postgresql_where=ACTIVE, sqlite_where=ACTIVE)
    with op.batch_alter_table('jobs') as batch:
        batch.alter_column('request_key', existing_type=sa.String(length=64), nullable=False)
        batch.alter_column('run_key', existing_type=sa.String(length=64), nullable=True)
    op.create_index(op.f('ix_jobs_request_key'), 'jobs', ['request_key'], unique=False)
    op.create_index(
        'uq_jobs_active_request_key', 'jobs', ['request_key'], unique=True,
        postgresql_where=ACTIVE, sqlite_where=ACTIVE,
    )


def downgrade() -> None:
    op.drop_index('uq_jobs_active_request_key', table_name='jobs', postgresql_where=ACTIVE, sqlite_where=ACTIVE)
    op.drop_index(op.f('ix_jobs_request_key'), table_name='jobs')
    op.execute("DELETE FROM jobs WHERE run_key IS NULL")
    with op.batch_alter_table('jobs') as batch:
        batch.alter_column('run_key', existing_type=sa.String(length=64), nullable=False)
        batch.drop_column('request_key')
    op.create_index(
        'uq_jobs_active_run_key', 'jobs', ['run_key'], unique=True, postgresql_where=ACTIVE, sqlite_where=ACTIVE
    )
    op.drop_index(op.f('ix_runs_request_key'), table_name='runs')
    op.drop_column('runs', 'request_key')
