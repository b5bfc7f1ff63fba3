"""Health, readiness, metrics and the error shape, against real PostgreSQL and Redis."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings


def test_healthz_and_readyz_report_up(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready", "database": "ok", "broker": "ok", "reaper": "ok", "overdue_jobs": 0
    }


def test_readyz_names_the_unreachable_database(settings: Settings) -> None:
    broken = settings.model_copy(update={"database_url": "postgresql+psycopg://postgres@127.0.0.1:1/none"})
    with TestClient(create_app(broken), raise_server_exceptions=False) as client:
        body = client.get("/readyz")
        assert body.status_code == 503
        assert body.json()["database"].startswith("unreachable")
        assert body.json()["broker"] == "ok"
        listing = client.get("/v1/runs")
        assert listing.status_code == 503
        assert listing.json()["code"] == "database_unavailable"


def test_readyz_names_the_unreachable_broker(settings: Settings) -> None:
    broken = settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0"})
    with TestClient(create_app(broken), raise_server_exceptions=False) as client:
        body = client.get("/readyz")
        assert body.status_code == 503
        assert body.json()["database"] == "ok"
        assert body.json()["broker"].startswith("unreachable")


def test_framework_errors_use_the_error_shape(client: TestClient) -> None:
    missing = client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert set(missing.json()) == {"code", "message"}
    assert missing.json()["code"] == "not_found"
    wrong_method = client.put("/v1/runs")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["code"] == "method_not_allowed"
    bad_id = client.get("/v1/jobs/not-a-uuid")
    assert bad_id.status_code == 422
    assert bad_id.json()["code"] == "invalid_request"
    unknown_job = client.get("/v1/jobs/00000000-0000-0000-0000-000000000000")
    assert unknown_job.status_code == 404
    assert unknown_job.json()["code"] == "job_not_found"


def test_metrics_count_requests_by_route_template(client: TestClient) -> None:
    client.get("/v1/jobs/00000000-0000-0000-0000-000000000001")
    client.get("/v1/jobs/00000000-0000-0000-0000-000000000002")
    text = client.get("/metrics").text
    assert 'zootriage_http_requests_total{method="GET",route="/v1/jobs/{job_id}",status="404"} 2.0' in text
    assert 'zootriage_jobs{status="queued"} 0.0' in text
    assert "zootriage_job_duration_seconds_count 0.0" in text
