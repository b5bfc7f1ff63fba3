"""Liveness and readiness: the first says the process answers, the second that its dependencies do."""

from __future__ import annotations

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
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
async def readyz(settings: SettingsDep) -> JSONResponse:
    """503 names each unreachable dependency, so an operator knows which one to look at."""
    database = await run_in_threadpool(_database_problem, settings)
    broker = await run_in_threadpool(broker_reachable, settings)
    ready = database is None and broker is None
    body = Readiness(
        status="ready" if ready else "unavailable",
        database="ok" if database is None else f"unreachable ({database})",
        broker="ok" if broker is None else f"unreachable ({broker})",
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)
