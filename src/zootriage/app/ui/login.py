"""The login form: checks a key once and opens a server-side login (``app.ui.page_sessions``) whose
random token is kept in an HttpOnly, SameSite=Strict cookie for ``page_session_hours``; logging out
deletes the login, so the cookie opens nothing afterwards even if it was copied."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.api_keys import authenticate, hash_key
from zootriage.app.services.errors import ServiceError
from zootriage.app.ui.page_sessions import close_session, open_session
from zootriage.app.ui.session import KEY_MAX, OLD_KEY_COOKIE, SESSION_COOKIE, check_csrf
from zootriage.app.ui.templating import render

router = APIRouter()


def _safe_next(target: str | None) -> str:
    """Only a path on this site: an absolute or protocol-relative URL would make the form an open redirect."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "/", reason: str | None = None) -> HTMLResponse:
    return render(request, "login.html", {"next": _safe_next(next), "reason": reason, "errors": {}})


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, session: SessionDep, settings: SettingsDep) -> Response:
    form = await request.form()
    key = str(form.get("key", ""))[: KEY_MAX + 1]
    target = _safe_next(str(form.get("next", "/")))
    try:
        check_csrf(request, str(form.get("csrf", "")))
        if not key or len(key) > KEY_MAX or authenticate(session, key, settings.api_key_hashes) is None:
            raise ServiceError(401, "unauthorized", "this API key is not valid (unknown or revoked)")
    except ServiceError as exc:
        context = {"next": target, "reason": None, "errors": {"key": f"{exc.code}: {exc.message}"}}
        return render(request, "login.html", context, status=exc.status)
    if previous := request.cookies.get(SESSION_COOKIE):
        close_session(session, previous)  # a new login replaces the browser's old one
    token = open_session(session, hash_key(key), settings.page_session_hours)
    response = RedirectResponse(target, status_code=303)
    secure = request.url.scheme == "https"
    response.set_cookie(
        SESSION_COOKIE, token, max_age=round(settings.page_session_hours * 3600),
        httponly=True, samesite="strict", secure=secure, path="/",
    )
    response.delete_cookie(OLD_KEY_COOKIE, path="/")
    return response


@router.post("/logout")
async def logout(request: Request, session: SessionDep) -> Response:
    form = await request.form()
    check_csrf(request, str(form.get("csrf", "")))
    if token := request.cookies.get(SESSION_COOKIE):
        close_session(session, token)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    response.delete_cookie(OLD_KEY_COOKIE, path="/")
    return response
