"""The short-id resolver (``app.services.short_ids``) on a SQLite database of its own: what a typed
id may look like, the prefix range at its edges (all zeros, all fs), and how a refusal reads."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from zootriage.app.db.base import Base
from zootriage.app.db.models import Checkpoint, Sweep
from zootriage.app.services import short_ids
from zootriage.app.services.errors import ServiceError

EDGES = [
    uuid.UUID("00000000-0000-0000-0000-000000000000"),
    uuid.UUID("00000000-0000-0000-0000-000000000001"),
    uuid.UUID("0000000f-ffff-ffff-ffff-ffffffffffff"),
    uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff"),
    uuid.UUID("12345678-9abc-4def-8123-456789abcdef"),
]


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    engine = create_engine(f"sqlite:///{tmp_path / 'ids.db'}")
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all(
            Sweep(id=i, selection={}, dataset={}, sampling={}, protocol={}, rule="geometry") for i in EDGES
        )
        session.add_all(
            Checkpoint(sha256=f"{n:08x}".rjust(64, "a"), size_bytes=1, format="torch", tags={})
            for n in range(7)
        )
        session.commit()
        yield session
    engine.dispose()


def refusal(session: Session, kind: short_ids.IdKind, text: str) -> tuple[int, str, str]:
    with pytest.raises(ServiceError) as caught:
        short_ids.resolve(session, kind, text)
    return caught.value.status, caught.value.code, caught.value.message


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("ffffffff", EDGES[3]),
        ("FFFFFFFF-FFFF", EDGES[3]),
        ("00000000000000000000000000000001", EDGES[1]),  # a full id needs no lookup
        ("0000000f", EDGES[2]),
        (" 12345678-9abc ", EDGES[4]),
        ("12345678-9abc-4def-8123-456789abcdef", EDGES[4]),
    ],
)
def test_a_prefix_names_the_one_id_in_its_range(session: Session, typed: str, expected: uuid.UUID) -> None:
    assert short_ids.resolve_uuid(session, short_ids.SWEEP, typed) == expected


def test_a_full_id_is_taken_as_it_is_even_unknown(session: Session) -> None:
    unknown = uuid.UUID(int=99)
    assert short_ids.resolve_uuid(session, short_ids.RUN, str(unknown)) == unknown  # the caller 404s


def test_the_refusals(session: Session) -> None:
    assert refusal(session, short_ids.SWEEP, "00000000")[:2] == (409, "ambiguous_id")
    assert "2 sweeps" in refusal(session, short_ids.SWEEP, "00000000-0000")[2]
    assert refusal(session, short_ids.SWEEP, "0000000")[:2] == (422, "invalid_request")
    missing = (404, "sweep_not_found", "no sweep id begins with 77777777")
    assert refusal(session, short_ids.SWEEP, "77777777") == missing
    status, code, message = refusal(session, short_ids.UPLOAD, "aaaaaaaa")
    assert (status, code) == (409, "ambiguous_id")
    assert message.startswith("7 uploads have ids beginning with aaaaaaaa") and "and 2 more" in message
    for bad in ("", "1234567g", "1234-5678", "12345678-9abc-4def-8123-456789abcdef0", "12345678--"):
        assert refusal(session, short_ids.SWEEP, bad)[:2] == (422, "invalid_request"), bad
    assert refusal(session, short_ids.UPLOAD, "aaaaaaaa-aaaa")[:2] == (422, "invalid_request")  # no dashes
