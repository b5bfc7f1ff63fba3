"""sweep projects: a sweep is in the one project it was created in (``sweeps.project_id``), no longer in
the projects of its members' jobs and runs, which let a project see a sweep it never asked for

An existing sweep gets the project of its own jobs (``jobs.sweep_id``). One with no job of its own (every
model answered by a stored run or by another request's active job) gets the project its first member
joined, the nearest record of where it was asked: for a job, a project that joined it (``project_jobs``),
else the job's own project; for a run, the project that took it in when the sweep was created (the first
to join it at or after the sweep's creation, else the last before). A sweep with none of these (its
members' jobs and runs deleted) lands in the default project, made again if it was deleted.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 16:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
DEFAULT_ID = "(SELECT id FROM projects WHERE name = 'default')"

FROM_OWN_JOBS = """
UPDATE sweeps SET project_id = (
    SELECT j.project_id FROM jobs j WHERE j.sweep_id = sweeps.id ORDER BY j.created_at, j.id LIMIT 1
)
"""

# A run member's project: joined at or after the sweep's creation (earliest first), else before (latest).
RUN_JOINED = """
SELECT pr.project_id FROM project_runs pr JOIN sweeps s ON s.id = m.sweep_id WHERE pr.run_id = m.run_id
ORDER BY CASE WHEN pr.created_at >= s.created_at THEN 0 ELSE 1 END,
         CASE WHEN pr.created_at >= s.created_at THEN pr.created_at END,
         pr.created_at DESC, pr.project_id
LIMIT 1
"""

FROM_FIRST_MEMBER = f"""
UPDATE sweeps SET project_id = (
    SELECT COALESCE(
        (SELECT MIN(pj.project_id) FROM project_jobs pj WHERE pj.job_id = m.job_id),
        (SELECT j.project_id FROM jobs j WHERE j.id = m.job_id),
        ({RUN_JOINED})
    )
    FROM sweep_members m
    WHERE m.sweep_id = sweeps.id AND (m.job_id IS NOT NULL OR m.run_id IS NOT NULL)
    ORDER BY m.position
    LIMIT 1
)
WHERE project_id IS NULL
"""

DEFAULT_IF_NEEDED = f"""
INSERT INTO projects (name, description, created_at)
SELECT 'default', 'what was asked without naming a project', CURRENT_TIMESTAMP
WHERE NOT EXISTS {DEFAULT_ID.replace("SELECT id", "SELECT 1")}
  AND EXISTS (SELECT 1 FROM sweeps WHERE project_id IS NULL)
"""


def upgrade() -> None:
    op.add_column("sweeps", sa.Column("project_id", BIG_ID, nullable=True))
    op.execute(FROM_OWN_JOBS)
    op.execute(FROM_FIRST_MEMBER)
    op.execute(DEFAULT_IF_NEEDED)
    op.execute(f"UPDATE sweeps SET project_id = {DEFAULT_ID} WHERE project_id IS NULL")
    with op.batch_alter_table("sweeps") as batch:
        batch.alter_column("project_id", existing_type=BIG_ID, nullable=False)
        batch.create_foreign_key(op.f("fk_sweeps_project_id_projects"), "projects", ["project_id"], ["id"])
        batch.create_index(op.f("ix_sweeps_project_id"), ["project_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("sweeps") as batch:
        batch.drop_index(op.f("ix_sweeps_project_id"))
        batch.drop_constraint(op.f("fk_sweeps_project_id_projects"), type_="foreignkey")
        batch.drop_column("project_id")
