"""API keys: random secrets shown once, stored as sha256 so a database leak reveals no credential.

A presented key is found through the unique index on its hash, then the stored hash is compared with
``hmac.compare_digest`` so that the final match takes the same time whatever prefix agrees. Keys given
by the deployment (``ZOOTRIAGE_API_KEY_HASHES``) are compared the same way, each of them every time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import exists, select, update
from sqlalchemy.orm import Session

from zootriage.app.db.models import ApiKey, utcnow
from zootriage.app.scopes import DEFAULT_SCOPES, Scope

# ``last_used_at`` is refreshed at most this often, so a busy key does not write on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class UnknownApiKey(LookupError):
    """Revoking a key id that does not exist."""

    code = "api_key_not_found"

    def __init__(self, key_id: int) -> None:
        super().__init__(f"no API key {key_id}")
        self.message = f"no API key {key_id}"


@dataclass(frozen=True)
class Caller:
    """Who a valid key belongs to: its name (``settings`` for a key given by hash), scopes, the
    projects it is limited to (None: every project) and its id (None for a key given by hash)."""

    name: str
    scopes: frozenset[Scope]
    projects: frozenset[str] | None = None
    key_id: int | None = None

    def may(self, needed: Scope) -> bool:
        return any(held.grants(needed) for held in self.scopes)

    def sees(self, project: str) -> bool:
        """Whether the key may read and write in ``project``."""
        return self.projects is None or project in self.projects


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    return "zt_" + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class IssuedKey:
    """A key just created: its stored row and the plain key, which exists only here."""

    row: ApiKey
    key: str


def create_api_key(
    session: Session,
    name: str,
    scopes: frozenset[Scope] = DEFAULT_SCOPES,
    projects: frozenset[str] | None = None,
) -> IssuedKey:
    """Store a new key under ``name``, limited to ``projects`` when given; the caller shows ``key``
    once and commits."""
    key = new_key()
    row = ApiKey(
        name=name,
        key_hash=hash_key(key),
        scopes=sorted(scopes),
        projects=None if projects is None else sorted(projects),
        created_at=utcnow(),
    )
    session.add(row)
    session.flush()
    return IssuedKey(row, key)


def list_api_keys(session: Session, after_id: int, limit: int) -> list[ApiKey]:
    return list(session.scalars(select(ApiKey).where(ApiKey.id > after_id).order_by(ApiKey.id).limit(limit)))


def revoke_api_key(session: Session, key_id: int) -> ApiKey:
    """Mark the key revoked (idempotent: a second revoke keeps the first time)."""
    row = session.get(ApiKey, key_id)
    if row is None:
        raise UnknownApiKey(key_id)
    if row.revoked_at is None:
        row.revoked_at = utcnow()
    return row


def keys_configured(session: Session, settings_hashes: list[str]) -> bool:
    """Whether any key can be used: one in the settings or one stored and not revoked."""
    if settings_hashes:
        return True
    return bool(session.scalar(select(exists().where(ApiKey.revoked_at.is_(None)))))


def _matches_settings(digest: str, settings_hashes: list[str]) -> bool:
    matched = False
    for stored in settings_hashes:  # no early exit: the time does not say which entry matched
        matched |= hmac.compare_digest(stored.encode(), digest.encode())
    return matched


def authenticate(session: Session, key: str, settings_hashes: list[str]) -> Caller | None:
    """The caller a presented key stands for, or None when it is unknown or revoked."""
    return authenticate_hash(session, hash_key(key), settings_hashes)


def authenticate_hash(session: Session, digest: str, settings_hashes: list[str]) -> Caller | None:
    """``authenticate`` for a key known by its sha256 (a page session keeps only that)."""
    if _matches_settings(digest, settings_hashes):
        return Caller("settings", DEFAULT_SCOPES)
    row = session.scalar(select(ApiKey).where(ApiKey.key_hash == digest))
    if row is None or not hmac.compare_digest(row.key_hash.encode(), digest.encode()):
        return None
    if row.revoked_at is not None:
        return None
    _note_use(session, row)
    projects = None if row.projects is None else frozenset(row.projects)
    return Caller(row.name, frozenset(Scope(s) for s in row.scopes), projects, row.id)


def _note_use(session: Session, row: ApiKey) -> None:
    now = utcnow()
    if row.last_used_at is not None and now - row.last_used_at < LAST_USED_RESOLUTION:
        return
    session.execute(update(ApiKey).where(ApiKey.id == row.id).values(last_used_at=now))
    session.commit()
