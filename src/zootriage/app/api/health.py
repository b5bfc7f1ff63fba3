"""Liveness and readiness: the first says the process answers, the second that its dependencies do.

Readiness names only which dependency is down: its error text (host names, ports, user names in a
connection string) goes to the server log, never to an unauthenticated client.
"""

from __future__ import annotations

import logging
import time

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import text

from zootriage.app.api.deps import SettingsDep
from zootriage.app.db.session import get_engine, get_sessionmaker
from zootriage.app.queue import broker_reachable
from zootriage.app.services.reaper import ReaperState, overdue
from zootriage.app.settings import Settings

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    database: str
    broker: str
    reaper: str
    overdue_jobs: int | None


def _reaper_problem(settings: Settings, state: ReaperState) -> str | None:
    """This process's reaper is stale when it has not swept successfully for three intervals."""
    if state.last_success is None:
        return "failing" if state.last_error else None
    age = time.monotonic() - state.last_success
    if age > 3 * settings.reaper_interval_s:
        return f"no successful sweep for {age:.0f} s"
    return None


def _overdue_jobs(settings: Settings) -> int | None:
    with get_sessionmaker(settings.effective_database_url)() as session:
        return overdue(session, settings)


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
async def readyz(settings: SettingsDep, request: Request) -> JSONResponse:
    """503 names each unreachable dependency, so an operator knows which log lines to look at; also
    when this process's reaper has stopped sweeping, or active jobs are overdue (lost jobs that a
    working reaper would already have requeued or failed)."""
    database = await run_in_threadpool(_database_problem, settings)
    broker = await run_in_threadpool(broker_reachable, settings)
    state: ReaperState = request.app.state.reaper
    reaper = _reaper_problem(settings, state)
    if reaper is not None:
        log.warning("readiness: reaper %s (last error: %s)", reaper, state.last_error)
    late = None if database is not None else await run_in_threadpool(_overdue_jobs, settings)
    ready = database is None and broker is None and reaper is None and not late
    body = Readiness(
        status="ready" if ready else "unavailable",
        database=_state("database", database),
        broker=_state("broker", broker),
        reaper="ok" if reaper is None else reaper,
        overdue_jobs=late,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)
