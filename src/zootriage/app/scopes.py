"""What an API key may do. Plain Python (no database), so that the command line can offer the scopes
as choices without importing SQLAlchemy."""

from __future__ import annotations

import enum


class Scope(enum.StrEnum):
    """What a key may do; each scope includes the ones before it (admin > write > read)."""

    read = "read"
    write = "write"
    admin = "admin"

    def grants(self, needed: Scope) -> bool:
        order = list(Scope)
        return order.index(self) >= order.index(needed)


# A new key's scopes unless told otherwise, and those of a key named by its hash in the settings:
# a CI pipeline's credential (submit and poll), not an admin one.
DEFAULT_SCOPES = frozenset({Scope.read, Scope.write})
