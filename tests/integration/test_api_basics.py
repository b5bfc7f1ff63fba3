"""Health, readiness, metrics and the error shape, against real PostgreSQL and Redis."""

from __future__ import annotations

import logging

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient

from zootriage.app.main import create_app
from zootriage.app.settings import Settings


def test_healthz_and_readyz_report_up(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready", "database": "ok", "broker": "ok", "reaper": "ok", "overdue_jobs": 0
    }


def test_readyz_names_the_unreachable_database_and_nothing_more(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    url = "postgresql+psycopg://secretuser@127.0.0.1:1/hidden_db"
    broken = settings.model_copy(update={"database_url": url})
    client = TestClient(create_app(broken), raise_server_exceptions=False)
    with client, caplog.at_level(logging.WARNING):
        body = client.get("/readyz")
        assert body.status_code == 503
        assert body.json()["database"] == "unreachable" and body.json()["broker"] == "ok"
        assert body.json()["status"] == "unavailable" and body.json()["overdue_jobs"] is None
        assert "127.0.0.1" not in body.text and "secretuser" not in body.text
        assert "127.0.0.1" in caplog.text  # the operator's details are in the log
        listing = client.get("/v1/runs")
        assert listing.status_code == 503
        assert listing.json()["code"] == "database_unavailable"
        assert listing.headers["retry-after"] == "1"
        assert "secretuser" not in listing.text and "hidden_db" not in listing.text


def test_readyz_names_the_unreachable_broker(settings: Settings) -> None:
    broken = settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0"})
    with TestClient(create_app(broken), raise_server_exceptions=False) as client:
        body = client.get("/readyz")
        assert body.status_code == 503
        answer = body.json()
        states = (answer["status"], answer["database"], answer["broker"])
        assert states == ("unavailable", "ok", "unreachable")
        assert "127.0.0.1" not in body.text


def test_framework_errors_use_the_error_shape(client: TestClient) -> None:
    missing = client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert set(missing.json()) == {"code", "message", "request_id"}
    assert missing.json()["code"] == "not_found"
    assert missing.json()["request_id"] == missing.headers["x-request-id"]
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


def test_every_response_carries_a_request_id_and_a_client_id_is_kept(client: TestClient) -> None:
    first, second = client.get("/healthz"), client.get("/healthz")
    assert len(first.headers["x-request-id"]) == 32
    assert first.headers["x-request-id"] != second.headers["x-request-id"]
    kept = client.get("/v1/jobs/not-a-uuid", headers={"X-Request-ID": "ci-run-42.step_3"})
    assert kept.headers["x-request-id"] == kept.json()["request_id"] == "ci-run-42.step_3"
    replaced = client.get("/v1/jobs/not-a-uuid", headers={"X-Request-ID": "no spaces <allowed>"})
    assert replaced.json()["request_id"] == replaced.headers["x-request-id"] != "no spaces <allowed>"


def test_an_unhandled_error_is_a_bare_500_whose_details_are_logged_under_its_id(
    settings: Settings, clean_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(settings)
    broken = APIRouter()

    @broken.get("/v1/broken")
    def explode() -> None:
        raise RuntimeError("secret detail: password=hunter2")

    app.include_router(broken)
    with TestClient(app, raise_server_exceptions=False) as client, caplog.at_level(logging.ERROR):
        response = client.get("/v1/broken")
    assert response.status_code == 500
    body = response.json()
    assert body == {
        "code": "internal_error",
        "message": "unexpected server error; quote the request id",
        "request_id": response.headers["x-request-id"],
    }
    assert "hunter2" not in response.text
    logged = [r for r in caplog.records if body["request_id"] in r.getMessage()]
    assert logged and logged[0].exc_info is not None
    assert "hunter2" in str(logged[0].exc_info[1])


@pytest.mark.parametrize(
    "url",
    [
        "/v1/trends?arch=%F2%B6%B5%A6W%3F%00&limit=409&name_contains=text%2Fjavascript",  # found by the fuzz
        "/v1/runs?architecture=resnet%00",
        "/v1/runs?name_contains=%00",
        "/v1/projects/de%00fault",
    ],
)
def test_a_nul_in_the_path_or_query_is_a_client_error_not_a_database_error(
    client: TestClient, url: str
) -> None:
    """PostgreSQL text cannot hold NUL: before the guard, ``GET /v1/trends?arch=…%00`` was a 500."""
    answer = client.get(url)
    assert answer.status_code == 422, answer.text
    assert answer.json()["code"] == "invalid_request" and "NUL" in answer.json()["message"]
    assert client.get("/v1/runs?architecture=resnet18").status_code == 200  # a plain query still passes
