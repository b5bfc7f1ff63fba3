"""The checkpoints repository: an upload's row by id, and saving a new one when two uploads of the same
bytes race."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from zootriage.app.db.models import Checkpoint


def stored_checkpoint(session: Session, sha256: str) -> Checkpoint | None:
    return session.get(Checkpoint, sha256)


def save_checkpoint(session: Session, row: Checkpoint) -> Checkpoint | None:
    """Commit a new upload's row: ``None`` when it was saved, else the row of the concurrent upload of
    the same bytes that committed first (its id is the content hash, so it is the same content)."""
    session.add(row)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        winner = stored_checkpoint(session, row.sha256)
        assert winner is not None, "an upload that lost a race is found under the winner's id"
        return winner
    return None
