"""The FastAPI application: routers, error handlers, metrics; ``create_app`` for tests and servers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.access import check_bind
from app.api import api_keys, backtests, checkpoints, gates, health, jobs, rankings, recommendations, runs
from app.api.capacity import DbSlots
from app.api.deps import MetricsAccess, ReadAccess
from app.api.errors import install_error_handlers
from app.api.request_id import RequestIdMiddleware
from app.db.session import POOL_CAPACITY
from app.metrics import Metrics, MetricsMiddleware
from app.settings import Settings, get_settings


def create_app(settings: Settings | None = None) -> FastAPI:
    """Raises ``app.access.UnsafeBind`` for settings that would serve the network with no key."""
    settings = settings or get_settings()
    check_bind(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.db_slots = DbSlots(POOL_CAPACITY, settings.db_slot_wait_s)
        yield

    app = FastAPI(
        title="zootriage",
        summary="Rank pretrained weights by the geometry of their class manifolds (GLUE markers).",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.settings = settings
    install_error_handlers(app)
    metrics = Metrics(settings.effective_database_url)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(RequestIdMiddleware)
    app.include_router(health.router)
    for module in (checkpoints, jobs, runs, backtests, recommendations, rankings, gates, api_keys):
        app.include_router(module.router, dependencies=[ReadAccess])

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse)
    def prometheus_metrics(_: MetricsAccess) -> PlainTextResponse:
        """Prometheus exposition: requests by route template, jobs by status, job durations."""
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
