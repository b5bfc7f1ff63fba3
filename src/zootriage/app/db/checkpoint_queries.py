"""The checkpoints repository: an upload's row by id, saving a new one when two uploads of the same
bytes race, and the list of uploads by keyset (``app.db.paging``) on (created_at, sha256), newest first."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from zootriage.app.db.models import Checkpoint
from zootriage.app.db.paging import PageKey, rows_after, split_page


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


def list_checkpoints(
    session: Session, *, limit: int, after: PageKey | None = None
) -> tuple[list[Checkpoint], PageKey | None]:
    """One page of uploads, newest first, and the key to continue from (None on the last page)."""
    query = select(Checkpoint)
    if after is not None:
        query = query.where(rows_after(Checkpoint.created_at, Checkpoint.sha256, after, descending=True))
    order = (Checkpoint.created_at.desc(), Checkpoint.sha256.desc())
    rows = session.scalars(query.order_by(*order).limit(limit + 1)).all()
    page, end = split_page(rows, limit)
    return page, (PageKey(end.created_at, end.sha256) if end is not None else None)
