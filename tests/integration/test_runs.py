"""The run history: filters, marker sorting, cursor paging and CSV export over stored runs."""

from __future__ import annotations

import csv
import io

import pytest
from fastapi.testclient import TestClient

from tests.integration.seeding import fake_run, seed_runs
from zootriage.app.db.session import session_scope
from zootriage.core.protocol import Protocol


@pytest.fixture
def seeded(client: TestClient, clean_db: str) -> TestClient:
    with session_scope(clean_db) as session:
        seed_runs(session, 25)
        session.add(fake_run(99, markers={"dimension": None}))
    return client


def _all_pages(client: TestClient, query: str) -> list[dict]:
    items: list[dict] = []
    cursor = None
    while True:
        suffix = f"&cursor={cursor}" if cursor else ""
        page = client.get(f"/v1/runs?{query}{suffix}")
        assert page.status_code == 200, page.text
        body = page.json()
        assert len(body["items"]) <= 7
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items


def test_cursor_paging_visits_every_run_once_newest_first(seeded: TestClient) -> None:
    items = _all_pages(seeded, "limit=7")
    assert len(items) == 26
    assert len({item["id"] for item in items}) == 26
    times = [item["created_at"] for item in items]
    assert times == sorted(times, reverse=True)


def test_sorting_by_a_marker_skips_runs_without_it(seeded: TestClient) -> None:
    items = _all_pages(seeded, "sort=dimension&order=asc&limit=7")
    values = [item["markers"]["dimension"] for item in items]
    assert len(values) == 25
    assert values == sorted(values)


def test_filters_combine(seeded: TestClient) -> None:
    body = seeded.get("/v1/runs?architecture=resnet18&marker=dimension&min=0.5&max=1.5&limit=100").json()
    dims = sorted(item["markers"]["dimension"] for item in body["items"])
    assert dims == [0.5, 0.7, 0.9, 1.1, 1.3, 1.5]
    assert {item["architecture"] for item in body["items"]} == {"resnet18"}
    dated = seeded.get(
        "/v1/runs?created_after=2026-01-01T03:00:00Z&created_before=2026-01-01T05:00:00Z"
    ).json()
    assert len(dated["items"]) == 2


def test_page_size_is_capped_by_the_server(seeded: TestClient) -> None:
    body = seeded.get("/v1/runs?limit=1000").json()
    assert len(body["items"]) == 26  # the settings' cap (100) is above the 26 rows
    assert body["next_cursor"] is None
    over = seeded.get("/v1/runs?limit=100000")  # over the bound every list endpoint declares
    assert (over.status_code, over.json()["code"]) == (422, "invalid_request")


def test_bad_queries_are_4xx(seeded: TestClient) -> None:
    cases = {
        "/v1/runs?sort=no_such_marker": "unknown_marker",
        "/v1/runs?min=1": "invalid_request",
        "/v1/runs?cursor=garbage": "invalid_cursor",
        "/v1/runs?limit=0": "invalid_request",
        "/v1/runs?created_after=yesterday": "invalid_request",
    }
    for url, code in cases.items():
        response = seeded.get(url)
        assert response.status_code == 422, url
        assert response.json()["code"] == code, url
    first = seeded.get("/v1/runs?limit=2").json()["next_cursor"]
    other_sort = seeded.get(f"/v1/runs?limit=2&sort=dimension&cursor={first}")
    assert other_sort.json()["code"] == "invalid_cursor"


def test_one_run_has_its_protocol_and_markers(seeded: TestClient) -> None:
    summary = seeded.get("/v1/runs?limit=1&order=asc").json()["items"][0]
    detail = seeded.get(f"/v1/runs/{summary['id']}").json()
    assert detail["protocol"] == Protocol(n_t=100).to_dict()  # the seeded {"n_t": 100}, every default filled
    assert {m["name"] for m in detail["markers"]} == {"dimension", "utilization"}
    missing = seeded.get("/v1/runs/00000000-0000-0000-0000-000000000000")
    assert missing.status_code == 404
    assert missing.json()["code"] == "run_not_found"


def test_csv_export_holds_the_filtered_history(seeded: TestClient) -> None:
    response = seeded.get("/v1/runs?format=csv&architecture=vgg11")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == 13
    assert {row["architecture"] for row in rows} == {"vgg11"}
    assert "dimension" in rows[0]
    assert float(rows[0]["dimension"]) == 2.4
