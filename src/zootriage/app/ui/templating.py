"""Rendering pages: one Jinja2 environment, autoescaped, and the CSRF cookie set where a form needs it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from zootriage.app.db.models import Job
from zootriage.app.ui.notes import shared_notes
from zootriage.app.ui.session import CSRF_COOKIE, csrf_token

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")


def number(value: float | None, digits: int = 4) -> str:
    """Markers span many magnitudes: four significant digits, and an honest dash for a missing value."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}g}"


def fields(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A stored JSON document (a model or dataset reference, a gate side, a sampling) as the rows of a
    definition list, so that no page shows a raw dict: nested objects become dotted keys
    (``model.path``), lists are joined with commas, null is a dash and true/false read yes/no. A
    reference's ``source`` (which kind it is) comes first; the rest keep the stored order."""
    if not isinstance(value, dict):
        return [(prefix or "value", _text(value))]
    rows: list[tuple[str, str]] = []
    for key, item in sorted(value.items(), key=lambda pair: pair[0] != "source"):
        name = f"{prefix}.{key}" if prefix else str(key)
        rows.extend(fields(item, name) if isinstance(item, dict) and item else [(name, _text(item))])
    return rows


def _text(value: Any) -> str:
    if value is None or value == {}:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return number(value, 6)
    if isinstance(value, list | tuple):
        return ", ".join(_text(item) for item in value) if value else "—"
    if isinstance(value, dict):
        return ", ".join(f"{key}={_text(item)}" for key, item in value.items())
    return str(value)


def seconds(value: float | None) -> str:
    """A duration to a tenth of a second (``number``'s significant digits would turn an hour-long
    job into ``3.6e+03``)."""
    return "—" if value is None else f"{value:.1f}"


def wall_seconds(job: Job) -> float | None:
    """A job's wall time: from its first claim (``started_at``, kept across stages and retries) to
    its end. The worker's ``duration_s`` times only the task that finished it, which for a job handed
    from extraction to the marker stage is the last stage alone."""
    if job.started_at is None or job.finished_at is None:
        return None
    return max((job.finished_at - job.started_at).total_seconds(), 0.0)


def queue_seconds(job: Job) -> float | None:
    """How long a job waited for its first claim (``created_at`` to ``started_at``)."""
    if job.started_at is None:
        return None
    return max((job.started_at - job.created_at).total_seconds(), 0.0)


templates.env.filters["num"] = number
templates.env.filters["fields"] = fields
templates.env.filters["seconds"] = seconds
templates.env.filters["wall_s"] = wall_seconds
templates.env.filters["queue_s"] = queue_seconds
templates.env.filters["shared_notes"] = shared_notes


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    context = {"csrf": csrf_token(request), **context}
    response = templates.TemplateResponse(request, name, context, status_code=status)
    if CSRF_COOKIE not in request.cookies:
        secure = request.url.scheme == "https"
        response.set_cookie(
            CSRF_COOKIE, context["csrf"], httponly=True, samesite="strict", secure=secure, path="/"
        )
    return response
