"""``/gates`` and ``/gates/{id}``: CI-gate decisions with each rule, its values and its verdict."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from zootriage.app.api.cursor import CURSOR_MAX, decode_cursor, encode_cursor
from zootriage.app.api.deps import SessionDep
from zootriage.app.db.paging import CREATED
from zootriage.app.services import gates as gate_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.ui.templating import render

router = APIRouter()
PAGE = 50


@router.get("/gates", response_class=HTMLResponse)
def gates_page(
    request: Request,
    session: SessionDep,
    cursor: Annotated[str | None, Query(max_length=CURSOR_MAX)] = None,
) -> HTMLResponse:
    try:
        after = decode_cursor(cursor, CREATED, True) if cursor else None
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    gates, next_key = gate_service.gate_page(session, PAGE, after)
    next_url = f"/gates?cursor={encode_cursor(next_key, CREATED, True)}" if next_key else None
    return render(request, "gates.html", {"gates": gates, "next_url": next_url})


@router.get("/gates/{gate_id}", response_class=HTMLResponse)
def gate_page(request: Request, gate_id: uuid.UUID, session: SessionDep) -> HTMLResponse:
    try:
        gate = gate_service.find_gate(session, gate_id)
    except ServiceError as exc:
        return render(request, "error.html", {"error": exc}, status=exc.status)
    return render(request, "gate.html", {"gate": gate})
