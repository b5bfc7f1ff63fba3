"""``/gates`` and ``/gates/{id}``: CI-gate decisions with each rule, its values and its verdict."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from app.api.cursor import CURSOR_MAX, decode_cursor, encode_cursor
from app.api.deps import SessionDep
from app.db.models import Gate
from app.db.paging import CREATED
from app.db.triage_queries import list_gates
from app.services.errors import ServiceError
from app.services.triage import gate_out
from app.ui.templating import render

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
    page, next_key = list_gates(session, limit=PAGE, after=after)
    next_url = f"/gates?cursor={encode_cursor(next_key, CREATED, True)}" if next_key else None
    return render(request, "gates.html", {"gates": [gate_out(row) for row in page], "next_url": next_url})


@router.get("/gates/{gate_id}", response_class=HTMLResponse)
def gate_page(request: Request, gate_id: uuid.UUID, session: SessionDep) -> HTMLResponse:
    row = session.get(Gate, gate_id)
    if row is None:
        error = ServiceError(404, "gate_not_found", f"no gate {gate_id}")
        return render(request, "error.html", {"error": error}, status=404)
    return render(request, "gate.html", {"gate": gate_out(row)})
