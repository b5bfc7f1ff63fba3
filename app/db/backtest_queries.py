"""The runs a back-test reads: given ids, their architecture, protocol and marker values."""

from __future__ import annotations

import uuid
from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db.models import Run
from app.db.run_queries import markers_of


def runs_with_markers(
    session: Session, run_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, tuple[Run, dict[str, float | None]]]:
    """The stored runs among ``run_ids`` with their marker values (two queries in all); ids that name
    no run are absent from the result."""
    runs = list(session.scalars(select(Run).where(Run.id.in_(list(run_ids)))))
    markers = markers_of(session, [run.id for run in runs])
    return {run.id: (run, {m.name: m.value for m in markers[run.id]}) for run in runs}
