"""The one query behind short ids: the ids of one kind of row that begin with a hex prefix.

A prefix ``p`` of a hex id of width ``w`` names the ids between ``p`` padded with ``0`` and ``p`` padded
with ``f`` to ``w`` digits, both included: a range on the primary key, which its index answers on every
backend (PostgreSQL orders ``uuid`` by its bytes, SQLite stores it as lower-case hex text, and an
upload's id is lower-case hex text: each order is the hex digits' order). Parsing what a user typed
and refusing it is the resolver's, ``app.services.short_ids``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from zootriage.app.db.models import Checkpoint, Gate, Job, Run, Sweep


@dataclass(frozen=True)
class IdKind:
    """A kind of row known by a hex id: its noun, its key column, how many hex digits a full id has,
    and the code of its 404."""

    noun: str
    column: InstrumentedAttribute[Any]
    width: int
    not_found: str

    @property
    def is_uuid(self) -> bool:
        return self.width == 32

    def bound(self, digits: str) -> uuid.UUID | str:
        """A full id from ``width`` hex digits, as the column holds it."""
        return uuid.UUID(digits) if self.is_uuid else digits


RUN = IdKind("run", Run.id, 32, "run_not_found")
JOB = IdKind("job", Job.id, 32, "job_not_found")
GATE = IdKind("gate", Gate.id, 32, "gate_not_found")
SWEEP = IdKind("sweep", Sweep.id, 32, "sweep_not_found")
UPLOAD = IdKind("upload", Checkpoint.sha256, 64, "checkpoint_not_found")


@dataclass(frozen=True)
class Matches:
    """The first few ids under a prefix (at most ``limit``) and how many there are in all."""

    ids: list[Any]
    count: int


def ids_with_prefix(session: Session, kind: IdKind, prefix: str, limit: int = 5) -> Matches:
    """The ids of ``kind`` that begin with the lower-case hex ``prefix`` (shorter than a full id)."""
    low = kind.bound(prefix.ljust(kind.width, "0"))
    high = kind.bound(prefix.ljust(kind.width, "f"))
    within = kind.column.between(low, high)
    count = session.scalar(select(func.count()).select_from(kind.column.class_).where(within)) or 0
    ids = list(session.scalars(select(kind.column).where(within).order_by(kind.column).limit(limit)))
    return Matches(ids, count)
