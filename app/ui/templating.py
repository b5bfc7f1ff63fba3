"""Rendering pages: one Jinja2 environment, autoescaped, and the CSRF cookie set where a form needs it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from zootriage.app.ui.session import CSRF_COOKIE, csrf_token

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")


def number(value: float | None, digits: int = 4) -> str:
    """Markers span many magnitudes: four significant digits, and an honest dash for a missing value."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}g}"


templates.env.filters["num"] = number


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    context = {"csrf": csrf_token(request), **context}
    response = templates.TemplateResponse(request, name, context, status_code=status)
    if CSRF_COOKIE not in request.cookies:
        secure = request.url.scheme == "https"
        response.set_cookie(
            CSRF_COOKIE, context["csrf"], httponly=True, samesite="strict", secure=secure, path="/"
        )
    return response
