"""Short ids: every id a user types (a run, job, upload, gate or sweep) may be a unique prefix of it.

This is the one resolver: the API's routes (``app.api.ids``), the pages and every service that takes
an id from a user go through :func:`resolve`; the command line sends what the user typed and lets the
server resolve it. A text is

- a full id (a UUID with or without its dashes, an upload's 64 hex digits): used as it is, found or
  404 by the caller as before;
- a prefix of at least ``MIN_PREFIX`` hex digits (for a UUID, dashes only where its printed form has
  them): the one id that begins with it; none is 404 (the kind's ``*_not_found``), several are 409
  ``ambiguous_id`` naming how many (type more of it);
- anything else, a shorter prefix included: 422 ``invalid_request``.

Eight hex digits are 32 bits: among a million ids a given prefix is shared with probability about
10⁶/2³² ≈ 2·10⁻⁴, so eight almost always suffice, and the 409 says when they do not.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from sqlalchemy.orm import Session

from zootriage.app.db.short_ids import GATE, JOB, RUN, SWEEP, UPLOAD, IdKind, ids_with_prefix
from zootriage.app.services.errors import ServiceError

__all__ = ["GATE", "JOB", "MIN_PREFIX", "RUN", "SWEEP", "UPLOAD", "IdKind", "resolve", "resolve_uuid"]

MIN_PREFIX = 8
ID_TEXT_MAX = 80  # what a route accepts before parsing: a full id with its dashes fits
DASHES = (8, 13, 18, 23)  # where a printed UUID has its dashes
HEX = re.compile(r"^[0-9a-f]*$")


def _digits(kind: IdKind, text: str) -> str:
    """The hex digits the user typed, lower-cased; 422 for anything that is no (prefix of an) id."""
    typed = text.strip().lower()
    dashed = kind.is_uuid and "-" in typed
    digits = typed.replace("-", "") if dashed else typed
    if HEX.match(digits) and dashed and any((char == "-") != (i in DASHES) for i, char in enumerate(typed)):
        raise ServiceError(
            422, "invalid_request", f"{kind.noun} id {text[:40]!r}: dashes only where a printed id has them"
        )
    if not HEX.match(digits) or len(digits) > kind.width:
        raise ServiceError(
            422,
            "invalid_request",
            f"{kind.noun} id {text[:40]!r} is not an id: hex digits, the full id or its first "
            f"{MIN_PREFIX} or more",
        )
    if len(digits) < MIN_PREFIX:
        raise ServiceError(
            422,
            "invalid_request",
            f"{kind.noun} id {text[:40]!r} is too short: give at least {MIN_PREFIX} hex digits of it",
        )
    return digits


def resolve(session: Session, kind: IdKind, text: str) -> Any:
    """The full id ``text`` names (a ``uuid.UUID``, or an upload's hex id): see the module."""
    digits = _digits(kind, text)
    if len(digits) == kind.width:
        return kind.bound(digits)
    found = ids_with_prefix(session, kind, digits)
    if found.count == 0:
        raise ServiceError(404, kind.not_found, f"no {kind.noun} id begins with {digits}")
    if found.count > 1:
        shown = ", ".join(str(i) for i in found.ids)
        more = f" and {found.count - len(found.ids)} more" if found.count > len(found.ids) else ""
        raise ServiceError(
            409,
            "ambiguous_id",
            f"{found.count} {kind.noun}s have ids beginning with {digits} ({shown}{more}): "
            "give more of the id",
        )
    return found.ids[0]


def resolve_uuid(session: Session, kind: IdKind, text: str) -> uuid.UUID:
    """:func:`resolve` for the kinds known by a UUID."""
    found = resolve(session, kind, text)
    assert isinstance(found, uuid.UUID), kind
    return found
