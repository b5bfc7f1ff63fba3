"""Runs for the trend tests, written straight into the database as the worker stores them
(``tests.integration.stored_runs``), then given a name, a time, tags, projects or an archive stamp, and
aliases moved between them as ``zootriage alias set`` moves them."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from tests.integration.stored_runs import stored_run
from zootriage.app.db import project_queries
from zootriage.app.db.models import Run
from zootriage.app.db.session import session_scope

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
FINGERPRINT = "f" * 64
REPEATS = 5  # the stored runs' protocol (tests.integration.stored_runs.PROTOCOL)


def _project(session: Session, name: str) -> int:
    """The id of the project ``name``, made if it does not exist yet."""
    found = project_queries.project_by_name(session, name) or project_queries.create_project(session, name)
    assert found is not None
    return found.id


def trend_run(
    database_url: str,
    label: str,
    markers: Mapping[str, float | None],
    *,
    day: int,
    stds: Mapping[str, float | None] | None = None,
    architecture: str | None = "resnet18",
    tags: Mapping[str, str] | None = None,
    projects: Sequence[str] = (),
    archived: bool = False,
    fingerprint: str = FINGERPRINT,
    undecidable: dict[str, str] | None = None,
) -> uuid.UUID:
    """A run named ``label``, stored ``day`` days after ``T0``, joined to ``projects``."""
    run_id = stored_run(
        database_url, label, markers, stds=stds, fingerprint=fingerprint, undecidable=undecidable,
        name=label, tags=tags,
    )
    with session_scope(database_url) as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.created_at = T0 + timedelta(days=day)
        run.architecture = architecture
        if archived:
            run.archived_at = T0 + timedelta(days=day, hours=1)
        for name in projects:
            project_queries.join_runs(session, _project(session, name), [run_id])
    return run_id


def move_alias(database_url: str, project: str, alias: str, run_id: uuid.UUID) -> datetime:
    """Point ``alias`` of ``project`` at the run (as ``alias set`` does); when the move happened."""
    with session_scope(database_url) as session:
        project_id = _project(session, project)
        _, event = project_queries.move_alias(session, project_id, alias, run_id, "test", None)
        assert event is not None
        return event.created_at
