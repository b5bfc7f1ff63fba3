"""The one page-token codec of every keyset list (runs, gates, jobs, uploads; ``app.db.paging`` does
the query): opaque tokens holding the last row's sort key, bound to the sort they were issued for, and
the page size every list endpoint shares.

A token comes from the client, so it is bounded in length and parsed defensively: anything but the
object we issue (an integer, a 400-digit number, JSON nested a thousand deep) is a 422, never a 500.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import Query

from zootriage.app.api.errors import ApiError
from zootriage.app.db.paging import CREATED, PageKey

PAGE_SIZE_MAX = 1000
CURSOR_MAX = 512  # the tokens we issue are well under 300 characters
PageLimit = Annotated[
    int, Query(ge=1, le=PAGE_SIZE_MAX, description="page size, also capped by the server's setting")
]
Cursor = Annotated[str | None, Query(max_length=CURSOR_MAX, description="next_cursor of the previous page")]


def encode_cursor(key: PageKey, sort: str, descending: bool) -> str:
    value = key.value.isoformat() if isinstance(key.value, datetime) else key.value
    raw = json.dumps({"s": sort, "d": descending, "v": value, "i": str(key.row_id)})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(
    token: str, sort: str, descending: bool, row_id: Callable[[str], Any] = uuid.UUID
) -> PageKey:
    """Reject a token that does not parse or was issued for another sort: it would skip or repeat rows.
    ``row_id`` parses the row's id (a ``ValueError`` for one that is none): a UUID, or an upload's hash."""
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if not isinstance(data, dict):
            raise TypeError("not a cursor object")
        if data.get("s") != sort or data.get("d") != descending:
            raise ValueError("the cursor belongs to another sort order")
        value, run_id = data["v"], data["i"]
        if not isinstance(value, str | int | float) or not isinstance(run_id, str):
            raise TypeError("malformed cursor fields")
        if sort == CREATED:
            return PageKey(datetime.fromisoformat(str(value)), row_id(run_id))
        number = float(value)
        if not math.isfinite(number):
            raise ValueError("the cursor's value is not a finite number")
        return PageKey(number, row_id(run_id))
    except (
        ValueError, KeyError, TypeError, OverflowError, RecursionError, binascii.Error, UnicodeDecodeError
    ) as exc:
        raise ApiError(422, "invalid_cursor", "cursor is not valid for this query") from exc
