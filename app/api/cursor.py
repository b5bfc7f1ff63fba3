"""Opaque page tokens: the last row's sort key, bound to the sort they were issued for."""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from datetime import datetime

from app.api.errors import ApiError
from app.db.run_queries import CREATED, PageKey


def encode_cursor(key: PageKey, sort: str, descending: bool) -> str:
    value = key.value.isoformat() if isinstance(key.value, datetime) else key.value
    raw = json.dumps({"s": sort, "d": descending, "v": value, "i": str(key.run_id)})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(token: str, sort: str, descending: bool) -> PageKey:
    """Reject a token that does not parse or was issued for another sort: it would skip or repeat rows."""
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if data["s"] != sort or data["d"] != descending:
            raise ValueError("the cursor belongs to another sort order")
        value = datetime.fromisoformat(data["v"]) if sort == CREATED else float(data["v"])
        return PageKey(value, uuid.UUID(data["i"]))
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise ApiError(422, "invalid_cursor", f"cursor is not valid for this query: {exc}") from exc
