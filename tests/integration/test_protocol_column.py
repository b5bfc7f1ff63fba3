"""The ``runs.protocol`` column holds a ``core.protocol.Protocol`` as the JSON every run has stored."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.exc import StatementError

from tests.integration.seeding import fake_run
from zootriage.app.db.models import Run
from zootriage.app.db.session import session_scope
from zootriage.core.protocol import Protocol

pytestmark = pytest.mark.integration

# A run's protocol exactly as the code before the typed model wrote it (Protocol.to_dict of the dataclass).
OLD_JSON = {
    "points_per_class": 50,
    "n_t": 1000,
    "seed": 0,
    "centering": "none",
    "dichotomy": "one_vs_rest",
    "repeats": 5,
}


def _stored_json(database_url: str, run_id: uuid.UUID) -> object:
    with session_scope(database_url) as session:
        return session.execute(text("SELECT protocol FROM runs WHERE id = :id"), {"id": run_id}).scalar_one()


def test_a_protocol_is_stored_as_the_json_of_old_rows_and_reads_back(clean_db: str) -> None:
    row = fake_run(1)
    row.protocol = Protocol(n_t=300, centering="global", repeats=3)
    with session_scope(clean_db) as session:
        session.add(row)
        session.flush()
        run_id = row.id
    assert _stored_json(clean_db, run_id) == {**OLD_JSON, "n_t": 300, "centering": "global", "repeats": 3}
    with session_scope(clean_db) as session:
        stored = session.get(Run, run_id)
        assert stored is not None
        assert stored.protocol == Protocol(n_t=300, centering="global", repeats=3)


OLD_PROTOCOL = Protocol(n_t=77, seed=4, points_per_class=None, dichotomy="random", repeats=1)


def test_an_old_row_written_as_plain_json_reads_back_as_its_protocol(clean_db: str) -> None:
    with session_scope(clean_db) as session:
        session.add(fake_run(2))
        session.flush()
        (run_id,) = session.execute(text("SELECT id FROM runs")).one()
        session.execute(
            text("UPDATE runs SET protocol = CAST(:doc AS JSONB) WHERE id = :id"),
            {"doc": '{"n_t": 77, "seed": 4, "points_per_class": null, "centering": "none", '
             '"dichotomy": "random", "repeats": 1}', "id": run_id},
        )
    with session_scope(clean_db) as session:
        stored = session.get(Run, run_id)
        assert stored is not None
        assert stored.protocol == OLD_PROTOCOL
    assert _stored_json(clean_db, run_id) == OLD_PROTOCOL.to_dict()  # reading rewrites nothing


def test_what_is_no_protocol_never_reaches_the_column(clean_db: str) -> None:
    row = fake_run(3)
    row.protocol = {"n_t": 0}  # type: ignore[assignment]
    with pytest.raises(StatementError, match="n_t"), session_scope(clean_db) as session:
        session.add(row)
        session.flush()
