"""Who is looking at a page: the same access policy as the API, with a login kept in a cookie.

A browser cannot add an ``X-API-Key`` header to a link, so the login form checks the key once and
opens a server-side login (``app.ui.page_sessions``): the HttpOnly, SameSite=Strict cookie holds a
random token with an expiry (never the key, never in a URL, never readable by scripts). Only the pages
read that cookie; the /v1 API still reads the header alone, so a cookie can never authorise an API call.

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
from zootriage.app.ui.page_sessions import session_caller

SESSION_COOKIE = "zt_session"
OLD_KEY_COOKIE = "zt_key"  # where earlier versions kept the raw key: never read, deleted at login and logout
CSRF_COOKIE = "zt_csrf"
CSRF_HEADER = "X-CSRF-Token"
KEY_MAX = 256  # issued keys are ~45 characters; anything far longer is not one


class LoginNeeded(Exception):
    """The page needs a key the browser has not given (or the one it gave is not valid)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def page_caller(request: Request, session: Session, settings: Settings) -> Caller | None:
    """The caller of an ``X-API-Key`` header, else of the login cookie; None for neither (or for a
    login that has ended: then ``request.state.login_ended`` is set, for the login form to say so)."""
    key = request.headers.get("X-API-Key")
    if key:
        caller = authenticate(session, key[:KEY_MAX], settings.api_key_hashes)
        if caller is None:
            raise LoginNeeded("the API key is not valid (unknown or revoked)")
        return caller
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    caller = session_caller(session, token, settings.api_key_hashes)
    if caller is None:
        request.state.login_ended = True
    return caller


def check_read(request: Request, session: Session, settings: Settings) -> None:
    """The API's read rule for a page; a missing or weak key sends the browser to the login form."""
    try:
        require_read(page_caller(request, session, settings), session, settings)
    except ServiceError as exc:
        ended = getattr(request.state, "login_ended", False)
        message = "your login has ended (logged out, expired or its key revoked); log in again"
        raise LoginNeeded(message if ended else exc.message) from None


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
