"""The job and upload lists against the real PostgreSQL: ``GET /v1/jobs`` (by status) and
``GET /v1/checkpoints``, newest first, paged by cursor like the run history (no row repeated or
skipped), with bad input a 422; and the ``/jobs`` and ``/uploads`` pages built on them."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.integration.access import PUBLIC, app_client, stored_key
from tests.integration.jobs import job_body
from zootriage.app.api.cursor import encode_cursor
from zootriage.app.api_keys import Scope
from zootriage.app.db.models import Checkpoint
from zootriage.app.db.paging import CREATED, PageKey
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings

T0 = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def unpublished(monkeypatch: pytest.MonkeyPatch) -> None:
    import zootriage.app.services.jobs as jobs

    monkeypatch.setattr(jobs, "enqueue_score", lambda *_args, **_kwargs: None)


def _pages(client: TestClient, path: str, limit: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        query = f"{path}{'&' if '?' in path else '?'}limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        answer = client.get(query)
        assert answer.status_code == 200, answer.text
        pages.append([item["id"] for item in answer.json()["items"]])
        cursor = answer.json()["next_cursor"]
        if cursor is None:
            return pages


def test_jobs_are_listed_newest_first_by_status_a_page_at_a_time(
    client: TestClient, program_ref: dict[str, Any], unpublished: None
) -> None:
    ids = [client.post("/v1/jobs", json=job_body(program_ref, seed=seed)).json()["id"] for seed in range(5)]
    client.delete(f"/v1/jobs/{ids[1]}")
    client.delete(f"/v1/jobs/{ids[3]}")
    newest_first = ids[::-1]
    assert _pages(client, "/v1/jobs", 2) == [newest_first[:2], newest_first[2:4], newest_first[4:]]
    assert _pages(client, "/v1/jobs?status=cancelled", 1) == [[ids[3]], [ids[1]]]
    queued = client.get("/v1/jobs?status=queued").json()
    assert [job["id"] for job in queued["items"]] == [ids[4], ids[2], ids[0]]
    assert {job["status"] for job in queued["items"]} == {"queued"} and queued["next_cursor"] is None
    assert client.get("/v1/jobs?status=succeeded").json() == {"items": [], "next_cursor": None}
    for bad in ("status=done", "limit=0", "limit=1001", "cursor=nope"):
        answer = client.get(f"/v1/jobs?{bad}")
        assert answer.status_code == 422, bad
        assert answer.json()["code"] in {"invalid_request", "invalid_cursor"}, bad
    by_rank = encode_cursor(PageKey(1.5, uuid.uuid4()), "dimension", True)  # another list's token
    assert client.get(f"/v1/jobs?cursor={by_rank}").json()["code"] == "invalid_cursor"


def _uploads(database_url: str, count: int) -> list[str]:
    """Uploads a minute apart (the newest last), with two at the same moment to test the tie-break."""
    ids = [f"{i:02x}" * 32 for i in range(1, count + 1)]
    moments = [T0 + timedelta(minutes=i) for i in range(count)]
    moments[1] = moments[2]
    with session_scope(database_url) as session:
        session.add_all([
            Checkpoint(sha256=sha, size_bytes=1024 * (i + 1), format="torch_export", filename=f"net{i}.pt2",
                       name=f"net {i}", tags={"team": "vision"}, created_at=moments[i])
            for i, sha in enumerate(ids)
        ])
    return ids


def test_uploads_are_listed_newest_first_a_page_at_a_time(client: TestClient, clean_db: str) -> None:
    ids = _uploads(clean_db, 5)
    expected = [ids[4], ids[3], ids[2], ids[1], ids[0]]  # ties: the larger id first, as the cursor orders
    assert _pages(client, "/v1/checkpoints", 2) == [expected[:2], expected[2:4], expected[4:]]
    assert _pages(client, "/v1/checkpoints", 10) == [expected]
    first = client.get("/v1/checkpoints?limit=1").json()["items"][0]
    assert (first["filename"], first["name"], first["model_path"]) == ("net4.pt2", "net 4", ids[4] + ".pt2")
    a_run_token = encode_cursor(PageKey(T0, uuid.uuid4()), CREATED, True)
    for bad in (f"cursor={a_run_token}", "cursor=nope", "limit=0"):
        answer = client.get(f"/v1/checkpoints?{bad}")
        assert answer.status_code == 422, bad


def test_the_jobs_and_uploads_pages_list_and_page(
    client: TestClient, clean_db: str, program_ref: dict[str, Any], unpublished: None
) -> None:
    ids = [client.post("/v1/jobs", json=job_body(program_ref, seed=seed)).json()["id"] for seed in range(2)]
    client.delete(f"/v1/jobs/{ids[0]}")
    page = client.get("/jobs")
    assert page.status_code == 200
    rows = re.findall(r'<tr class="job-row" data-status="(\w+)"><td><code title="([0-9a-f-]+)"', page.text)
    assert rows == [("queued", ids[1]), ("cancelled", ids[0])]
    only = client.get("/jobs?status=cancelled").text
    assert re.findall(r'<code title="([0-9a-f-]+)"', only) == [ids[0]]
    assert '<option selected>cancelled</option>' in only
    wrong = client.get("/jobs?status=done")
    assert wrong.status_code == 422 and "invalid_request: status" in wrong.text

    uploads = client.get("/uploads")
    assert uploads.status_code == 200 and program_ref["path"][:12] in uploads.text
    assert uploads.text.count('class="upload-row"') == 1
    bad = client.get("/uploads?cursor=nope")
    assert bad.status_code == 422 and "invalid_cursor" in bad.text


def test_the_uploads_page_has_a_next_page(client: TestClient, clean_db: str) -> None:
    ids = _uploads(clean_db, 52)
    first = client.get("/uploads").text
    assert first.count('class="upload-row"') == 50
    found = re.search(r'id="next-page" href="([^"]+)"', first)
    assert found, "no next page link"
    rest = client.get(found.group(1).replace("&amp;", "&")).text
    assert rest.count('class="upload-row"') == 2 and ids[0][:12] in rest and 'id="next-page"' not in rest


def test_the_lists_and_id_lookups_need_a_read_key_off_loopback(settings: Settings, clean_db: str) -> None:
    """Access is checked before an id is resolved: a caller without a key learns nothing of which ids
    exist (no 404 or 409 before the 401)."""
    _uploads(clean_db, 3)
    reader = {"X-API-Key": stored_key(clean_db, Scope.read)}
    with app_client(settings, **PUBLIC) as client:
        for path in ("/v1/jobs", "/v1/checkpoints", "/v1/checkpoints/01010101", "/v1/checkpoints/0000000000",
                     "/v1/runs/abcdef01", "/v1/jobs/0", "/v1/gates/abcdef01", "/v1/sweeps/abcdef01"):
            refused = client.get(path)
            assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized"), path
        archive = client.post("/v1/runs/abcdef01/archive", headers=reader)
        assert (archive.status_code, archive.json()["code"]) == (403, "forbidden")  # before the 404
        for path in ("/jobs", "/uploads"):
            page = client.get(path, follow_redirects=False)
            assert page.status_code == 303 and page.headers["location"].startswith("/login?"), path
        assert client.get("/v1/checkpoints/01010101", headers=reader).json()["id"] == "01" * 32
        assert len(client.get("/v1/checkpoints", headers=reader).json()["items"]) == 3
        assert client.get("/v1/jobs", headers=reader).json()["items"] == []
