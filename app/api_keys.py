"""API keys: random secrets shown once, stored as sha256 so a database leak reveals no credential."""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from app.db.models import ApiKey


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    return "zt_" + secrets.token_urlsafe(32)


def create_api_key(session: Session, name: str) -> str:
    """Store a new key under ``name`` and return the plain key (the only time it exists)."""
    key = new_key()
    session.add(ApiKey(name=name, key_hash=hash_key(key)))
    return key


def keys_configured(session: Session) -> bool:
    return bool(session.scalar(select(exists().where(ApiKey.id.is_not(None)))))


def key_is_valid(session: Session, key: str) -> bool:
    return session.scalar(select(ApiKey.id).where(ApiKey.key_hash == hash_key(key))) is not None
