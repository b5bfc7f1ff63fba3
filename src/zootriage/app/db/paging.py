"""Keyset paging, the one way every list in the service pages: runs, gates, jobs, uploads and API keys.

A page is the rows after the previous page's last ``(key, id)`` in the list's order, fetched with
``WHERE (key, id) < (last_key, last_id)`` (``>`` ascending) and ``LIMIT size + 1``: the extra row says
whether another page exists, and every page costs what the first does, unlike ``OFFSET``. The key that
continues a list is the last row's; ``app.api.cursor`` turns it into the opaque token clients see.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, and_, or_
from sqlalchemy.orm import QueryableAttribute

T = TypeVar("T")

CREATED = "created_at"
Column = ColumnElement[Any] | QueryableAttribute[Any]


@dataclass(frozen=True)
class PageKey:
    """Where the previous page ended: its sort value and row id (an upload's id is its sha256 text)."""

    value: Any
    row_id: uuid.UUID | str


def rows_after(
    key: Column, row_id: Column, last: PageKey, descending: bool
) -> ColumnElement[bool]:
    """The rows strictly after ``last`` in the order ``(key, row_id)``, descending or ascending."""
    if descending:
        return or_(key < last.value, and_(key == last.value, row_id < last.row_id))
    return or_(key > last.value, and_(key == last.value, row_id > last.row_id))


def split_page(rows: Sequence[T], limit: int) -> tuple[list[T], T | None]:
    """The page (at most ``limit`` rows of the ``limit + 1`` fetched) and its last row when another
    page follows, else ``None``."""
    page = list(rows[:limit])
    return page, (page[-1] if len(rows) > limit else None)
