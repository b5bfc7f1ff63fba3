"""``/runs`` and its CSV filter on a run's name and tags through the same filter as ``GET /v1/runs``."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.integration.seeding import seed_runs
from zootriage.app.db.models import Run, RunTag
from zootriage.app.db.session import session_scope


def test_the_history_filters_on_name_and_every_tag(client: TestClient, clean_db: str) -> None:
    with session_scope(clean_db) as session:
        runs = seed_runs(session, 3)
        runs[0].name, runs[1].name = "baseline", "baseline"
        runs[0].tags = [RunTag(key="team", value="vision"), RunTag(key="stage", value="prod")]
        runs[1].tags = [RunTag(key="team", value="vision")]
        session.flush()
        ids = [str(run.id) for run in runs]
    for query, shown in (
        ("name=baseline", {ids[0], ids[1]}),
        ("tag=team=vision", {ids[0], ids[1]}),
        ("tag=team=vision&tag=stage=prod", {ids[0]}),
        ("name=baseline&tag=stage=prod", {ids[0]}),
        ("tag=team=vision&tag=", {ids[0], ids[1]}),  # the form's empty "another tag" field
    ):
        page = client.get(f"/runs?{query}")
        assert page.status_code == 200, (query, page.text[-400:])
        listed = {run_id for run_id in ids if f"/runs/{run_id}" in page.text}
        assert listed == shown, query
        api = client.get(f"/v1/runs?{query.replace('&tag=', '') if query.endswith('tag=') else query}")
        assert {item["id"] for item in api.json()["items"]} == shown, query
        csv = client.get(f"/runs.csv?{query}").text.splitlines()
        assert {line.split(",")[0] for line in csv[1:]} == shown, query
    kept = client.get("/runs?tag=team=vision&tag=stage=prod&name=baseline")
    assert 'value="team=vision"' in kept.text and 'value="stage=prod"' in kept.text
    assert "stage%3Dprod" in kept.text  # the CSV link carries the tags
    bad = client.get("/runs?tag=nonsense")
    assert bad.status_code == 422 and "tag filter" in bad.text
    assert client.get("/runs.csv?tag=nonsense").json()["code"] == "invalid_request"


def test_the_history_filters_on_when_runs_were_created(client: TestClient, clean_db: str) -> None:
    with session_scope(clean_db) as session:
        seed_runs(session, 3)  # created 2026-01-01 at 00:00, 01:00 and 02:00 UTC
        session.flush()
        ids = [str(run.id) for run in session.query(Run).order_by(Run.created_at)]
    for query, shown in (
        ("created_after=2026-01-01T01:00", ids[1:]),
        ("created_before=2026-01-01T01:00", ids[:1]),
        ("created_after=2026-01-01T00:30&created_before=2026-01-01T01:30", ids[1:2]),
        ("created_before=2026-01-01", []),
        ("created_after=2026-01-01T02:00%2B01:00", ids[1:]),  # a zone given is kept: 01:00 UTC
    ):
        page = client.get(f"/runs?{query}")
        assert page.status_code == 200, (query, page.text[-400:])
        assert {run_id for run_id in ids if f"/runs/{run_id}" in page.text} == set(shown), query
        csv = client.get(f"/runs.csv?{query}").text.splitlines()
        assert {line.split(",")[0] for line in csv[1:]} == set(shown), query
    api = client.get("/v1/runs?created_after=2026-01-01T01:00:00Z").json()["items"]
    assert {item["id"] for item in api} == set(ids[1:])
    bad = client.get("/runs?created_after=yesterday")
    assert bad.status_code == 422 and "is not a date" in bad.text


def test_one_query_means_the_same_to_the_api_the_page_and_the_csv(client: TestClient, clean_db: str) -> None:
    """``GET /v1/runs``, ``/runs`` and ``/runs.csv`` read their filter through one dependency: the
    form's blank fields are absent for all three, and a bad bound is the same 422 everywhere."""
    with session_scope(clean_db) as session:
        runs = seed_runs(session, 4)  # dimension 0.0, 0.1, 0.2, 0.3; resnet18 for odd i
        session.flush()
        ids = [str(run.id) for run in runs]
    blanks = "name=&weights=&dataset=&created_after=&created_before=&max=&tag="
    query = f"architecture=resnet18&marker=dimension&min=0.2&{blanks}"
    api = client.get(f"/v1/runs?{query}")
    assert api.status_code == 200, api.text
    assert [item["id"] for item in api.json()["items"]] == [ids[3]]
    page = client.get(f"/runs?{query}")
    assert page.status_code == 200 and {i for i in ids if f"/runs/{i}" in page.text} == {ids[3]}
    assert [line.split(",")[0] for line in client.get(f"/runs.csv?{query}").text.splitlines()[1:]] == [ids[3]]
    everything = client.get(f"/v1/runs?{blanks}&marker=&min=")
    assert len(everything.json()["items"]) == 4, everything.text
    for url in ("/v1/runs", "/runs.csv"):
        bad = client.get(f"{url}?marker=dimension&min=abc")
        assert (bad.status_code, bad.json()["code"]) == (422, "invalid_request"), url
        assert "min: 'abc' is not a number" in bad.json()["message"], url
        for text in ("nan", "-inf", "Infinity"):
            odd = client.get(f"{url}?marker=dimension&max={text}")
            assert (odd.status_code, odd.json()["code"]) == (422, "invalid_request"), (url, text)
            assert f"max: '{text}' is not a finite number" in odd.json()["message"], (url, text)
    shown = client.get("/runs?marker=dimension&min=abc")
    assert shown.status_code == 422 and "min: &#39;abc&#39; is not a number" in shown.text
    naive, zoned = "created_after=2026-01-01T02:00", "created_after=2026-01-01T02:00Z"
    assert client.get(f"/v1/runs?{naive}").json() == client.get(f"/v1/runs?{zoned}").json()
