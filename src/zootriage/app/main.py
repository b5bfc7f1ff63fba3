"""The FastAPI application: routers, error handlers, metrics; ``create_app`` for tests and servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from zootriage.app.access import check_bind
from zootriage.app.api import (
    api_keys,
    artifacts,
    backtests,
    checkpoints,
    gates,
    health,
    jobs,
    projects,
    rankings,
    recommendations,
    runs,
    sweeps,
    trends,
)
from zootriage.app.api.capacity import DbSlots
from zootriage.app.api.deps import MetricsAccess, ReadAccess
from zootriage.app.api.errors import install_error_handlers
from zootriage.app.api.request_id import RequestIdMiddleware
from zootriage.app.body_limits import BodyLimitMiddleware
from zootriage.app.db.session import POOL_CAPACITY
from zootriage.app.metrics import Metrics, MetricsMiddleware
from zootriage.app.nul_guard import NulGuardMiddleware
from zootriage.app.security_headers import SecurityHeadersMiddleware
from zootriage.app.services.reaper import ReaperState, run_periodically
from zootriage.app.settings import Settings, get_settings
from zootriage.app.ui.router import install_ui


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Per-app state that needs the event loop: the database slots that bound concurrent requests
    (app/api/capacity.py), and the reaper (app/services/reaper.py) sweeping in the background for the
    app's whole life."""
    settings: Settings = app.state.settings
    app.state.db_slots = DbSlots(POOL_CAPACITY, settings.db_slot_wait_s)
    task = asyncio.create_task(run_periodically(settings, app.state.reaper))
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


def create_app(settings: Settings | None = None) -> FastAPI:
    """Raises ``app.access.UnsafeBind`` for settings that would serve the network with no key."""
    settings = settings or get_settings()
    check_bind(settings)
    app = FastAPI(
        lifespan=_lifespan,
        title="zootriage",
        summary="Rank pretrained weights by the geometry of their class manifolds (GLUE markers).",
        version="0.1.0",
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.reaper = ReaperState()
    install_error_handlers(app)
    metrics = Metrics(settings.effective_database_url)
    app.add_middleware(NulGuardMiddleware)  # inside the body limits: the body it reads is bounded
    app.add_middleware(BodyLimitMiddleware, settings=settings)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(RequestIdMiddleware)
    app.add_middleware(SecurityHeadersMiddleware)  # outermost: every answer gets the headers
    app.include_router(health.router)
    routers = (checkpoints, jobs, sweeps, runs, backtests, recommendations, rankings, gates, api_keys)
    for module in (*routers, trends, projects, artifacts):
        app.include_router(module.router, dependencies=[ReadAccess])

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse)
    def prometheus_metrics(_: MetricsAccess) -> PlainTextResponse:
        """Prometheus exposition: requests by route template, jobs by status, job durations."""
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    install_ui(app)
    return app
