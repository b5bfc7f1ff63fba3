"""``/uploads``: every uploaded checkpoint, newest first, a page at a time (the service behind
``GET /v1/checkpoints``), with the reference a job names it by."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from zootriage.app.api.checkpoints import upload_key_of
from zootriage.app.api.cursor import CURSOR_MAX, decode_cursor, encode_cursor
from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.db.paging import CREATED
from zootriage.app.services import checkpoints as checkpoint_service
from zootriage.app.services import projects as project_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.ui.session import page_caller
from zootriage.app.ui.templating import render

router = APIRouter()
PAGE = 50


@router.get("/uploads", response_class=HTMLResponse)
def uploads_page(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    cursor: Annotated[str | None, Query(max_length=CURSOR_MAX)] = None,
) -> HTMLResponse:
    try:
        project_service.check_uploads_visible(page_caller(request, session, settings))
        after = decode_cursor(cursor, CREATED, True, upload_key_of) if cursor else None
        uploads, next_key = checkpoint_service.checkpoint_page(session, PAGE, after)
    except ServiceError as exc:
        return render(request, "uploads.html", {"uploads": [], "error": exc}, status=exc.status)
    next_url = f"/uploads?cursor={encode_cursor(next_key, CREATED, True)}" if next_key else None
    context = {"uploads": uploads, "next_url": next_url, "first_page": cursor is None}
    return render(request, "uploads.html", context)
