"""Liveness and readiness: the first says the process answers, the second that its dependencies do.

Readiness names only which dependency is down: its error text (host names, ports, user names in a
connection string) goes to the server log, never to an unauthenticated client.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import text

from app.api.deps import SettingsDep
from app.db.session import get_engine
from app.queue import broker_reachable
from app.settings import Settings

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    database: str
    broker: str


def _database_problem(settings: Settings) -> str | None:
    try:
        with get_engine(settings.effective_database_url).connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _state(name: str, problem: str | None) -> str:
    if problem is None:
        return "ok"
    log.warning("readiness: %s unreachable: %s", name, problem)
    return "unreachable"


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
async def readyz(settings: SettingsDep) -> JSONResponse:
    """503 names each unreachable dependency, so an operator knows which log lines to look at."""
    database = await run_in_threadpool(_database_problem, settings)
    broker = await run_in_threadpool(broker_reachable, settings)
    ready = database is None and broker is None
    body = Readiness(
        status="ready" if ready else "unavailable",
        database=_state("database", database),
        broker=_state("broker", broker),
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)
