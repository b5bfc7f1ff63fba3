"""Who is looking at a page: the same access policy as the API, with the key kept in a cookie.

A browser cannot add an ``X-API-Key`` header to a link, so the login form stores the key in an
HttpOnly, SameSite=Strict cookie (never in a URL, never readable by scripts). Only the pages read that
cookie; the /v1 API still reads the header alone, so a cookie can never authorise an API call.

Writes from pages need a CSRF token besides: a random token in its own SameSite=Strict cookie that the
page repeats in the ``X-CSRF-Token`` header (HTMX sends it from ``hx-headers``) or a form field. A
page on another site can neither read the cookie nor, under SameSite=Strict, make the browser send it.
"""

from __future__ import annotations

import hmac
import secrets

from fastapi import Request
from sqlalchemy.orm import Session

from zootriage.app.api.deps import require_read, require_write
from zootriage.app.api_keys import Caller, authenticate
from zootriage.app.services.errors import ServiceError
from zootriage.app.settings import Settings

KEY_COOKIE = "zt_key"
CSRF_COOKIE = "zt_csrf"
CSRF_HEADER = "X-CSRF-Token"
KEY_MAX = 256  # issued keys are ~45 characters; anything far longer is not one


class LoginNeeded(Exception):
    """The page needs a key the browser has not given (or the one it gave is not valid)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def presented_key(request: Request) -> str | None:
    key = request.headers.get("X-API-Key") or request.cookies.get(KEY_COOKIE)
    return key[:KEY_MAX] if key else None


def page_caller(request: Request, session: Session, settings: Settings) -> Caller | None:
    key = presented_key(request)
    if key is None:
        return None
    caller = authenticate(session, key, settings.api_key_hashes)
    if caller is None:
        raise LoginNeeded("the stored API key is not valid (unknown or revoked); log in again")
    return caller


def check_read(request: Request, session: Session, settings: Settings) -> None:
    """The API's read rule for a page; a missing or weak key sends the browser to the login form."""
    try:
        require_read(page_caller(request, session, settings), session, settings)
    except ServiceError as exc:
        raise LoginNeeded(exc.message) from None


def csrf_token(request: Request) -> str:
    """The browser's CSRF token, or a fresh one that ``remember_csrf`` will set as its cookie."""
    token = request.cookies.get(CSRF_COOKIE)
    if token is None:
        token = getattr(request.state, "new_csrf", None) or secrets.token_urlsafe(32)
        request.state.new_csrf = token
    return token


def check_csrf(request: Request, submitted: str | None) -> None:
    cookie = request.cookies.get(CSRF_COOKIE)
    given = submitted or request.headers.get(CSRF_HEADER)
    if not cookie or not given or not hmac.compare_digest(cookie.encode(), given.encode()):
        raise ServiceError(403, "csrf_failed", "the form's CSRF token is missing or stale; reload the page")


def check_write(request: Request, session: Session, settings: Settings, submitted: str | None = None) -> None:
    """CSRF first (a forged request learns nothing about keys), then the API's write rule."""
    check_csrf(request, submitted)
    require_write(page_caller(request, session, settings), session, settings)
