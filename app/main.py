"""The FastAPI application: routers, error handlers, metrics; ``create_app`` for tests and servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.api import backtests, checkpoints, gates, health, jobs, rankings, recommendations, runs
from app.api.errors import install_error_handlers
from app.body_limits import BodyLimitMiddleware
from app.metrics import Metrics, MetricsMiddleware
from app.services.reaper import ReaperState, run_periodically
from app.settings import Settings, get_settings


@asynccontextmanager
async def _reaping(app: FastAPI) -> AsyncIterator[None]:
    """The reaper (app/services/reaper.py) sweeps in the background for the app's whole life."""
    task = asyncio.create_task(run_periodically(app.state.settings, app.state.reaper))
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    app = FastAPI(
        lifespan=_reaping,
        title="zootriage",
        summary="Rank pretrained weights by the geometry of their class manifolds (GLUE markers).",
        version="0.1.0",
    )
    app.state.settings = settings
    app.state.reaper = ReaperState()
    install_error_handlers(app)
    metrics = Metrics(settings.effective_database_url)
    app.add_middleware(BodyLimitMiddleware, settings=settings)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    for module in (health, checkpoints, jobs, runs, backtests, recommendations, rankings, gates):
        app.include_router(module.router)

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse)
    def prometheus_metrics() -> PlainTextResponse:
        """Prometheus exposition: requests by route template, jobs by status, job durations."""
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
