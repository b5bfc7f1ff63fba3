"""Prometheus metrics: HTTP traffic counted in-process, job figures read from the database at scrape.

Jobs run in other processes (workers), so their counts and durations come from the jobs table, which
is the one place every process writes; a per-process counter would undercount.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import case, func, select
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from zootriage.app.db.models import Job, JobStatus
from zootriage.app.db.session import get_sessionmaker

DURATION_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)
# Every label value that comes from a request is drawn from a fixed set, so no client can grow the
# number of series: methods outside this set count as "other", paths by their route template.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class JobCollector(Collector):
    def __init__(self, database_url: str) -> None:
        self._database_url = database_url

    def collect(self) -> Iterator[Metric]:
        by_status = GaugeMetricFamily("zootriage_jobs", "Jobs by status", labels=["status"])
        buckets = [func.sum(case((Job.duration_s <= b, 1), else_=0)) for b in DURATION_BUCKETS]
        with get_sessionmaker(self._database_url)() as session:
            counts = dict(session.execute(select(Job.status, func.count()).group_by(Job.status)).all())
            finished = select(func.count(), func.coalesce(func.sum(Job.duration_s), 0.0), *buckets).where(
                Job.duration_s.is_not(None)
            )
            total, total_s, *cumulative = session.execute(finished).one()
        for status in JobStatus:
            by_status.add_metric([status.value], counts.get(status.value, 0))
        yield by_status
        duration = HistogramMetricFamily(
            "zootriage_job_duration_seconds", "Wall time of finished jobs, queue wait excluded"
        )
        pairs = [(str(b), float(c or 0)) for b, c in zip(DURATION_BUCKETS, cumulative, strict=True)]
        duration.add_metric([], [*pairs, ("+Inf", float(total))], sum_value=float(total_s))
        yield duration


class Metrics:
    """One registry per app instance, so several apps in one process (tests) never collide."""

    def __init__(self, database_url: str) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "zootriage_http_requests",
            "HTTP requests by route template",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "zootriage_http_request_duration_seconds",
            "HTTP latency by route template",
            ["method", "route"],
            registry=self.registry,
        )
        self.registry.register(JobCollector(database_url))


class MetricsMiddleware:
    """Pure ASGI (no per-request Request/Response objects): counts and times every HTTP request."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            # The template ("/v1/jobs/{job_id}"), not the raw path, keeps label cardinality bounded.
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope["method"] if scope["method"] in KNOWN_METHODS else "other"
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - start)
            self.metrics.requests.labels(method, route, str(status)).inc()
