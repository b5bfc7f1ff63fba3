"""Logins of the web pages, kept on the server: the browser holds a random token, the database the
token's sha256 (``page_sessions``), the sha256 of the API key it was opened with and when it ends.

The cookie never holds the key itself, so a copied cookie is worth one login, not the key: logging
out deletes the row (a replayed cookie then opens nothing), the row ends at ``expires_at``
(``Settings.page_session_hours``), and every request re-checks the key it was opened with, so
revoking that key (or removing it from ``api_key_hashes``) ends its logins too. The token has 256
random bits and is looked up by its hash, so the lookup's timing says nothing about stored tokens.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import delete
from sqlalchemy.orm import Session

from zootriage.app.api_keys import Caller, authenticate_hash, hash_key
from zootriage.app.db.models import PageSession, utcnow

TOKEN_BYTES = 32
TOKEN_MAX = 128  # a token is 43 characters; a longer cookie is none of ours


def open_session(db: Session, key_hash: str, hours: float) -> str:
    """A new login for the key with sha256 ``key_hash``; returns the token for the cookie. Logins that
    have ended are deleted on the way, so the table holds live ones only (plus those ended since)."""
    now = utcnow()
    db.execute(delete(PageSession).where(PageSession.expires_at <= now))
    token = secrets.token_urlsafe(TOKEN_BYTES)
    db.add(PageSession(token_hash=hash_key(token), key_hash=key_hash, created_at=now,
                       expires_at=now + timedelta(hours=hours)))
    db.commit()
    return token


def session_caller(db: Session, token: str, settings_hashes: list[str]) -> Caller | None:
    """Whom a live login stands for; None (and the row deleted) when it has expired or its key is no
    longer valid, None when there is no such login (logged out, or never one)."""
    row = db.get(PageSession, hash_key(token[:TOKEN_MAX]))
    if row is None:
        return None
    caller = authenticate_hash(db, row.key_hash, settings_hashes) if row.expires_at > utcnow() else None
    if caller is None:
        close_session(db, token)
    return caller


def close_session(db: Session, token: str) -> None:
    db.execute(delete(PageSession).where(PageSession.token_hash == hash_key(token[:TOKEN_MAX])))
    db.commit()
