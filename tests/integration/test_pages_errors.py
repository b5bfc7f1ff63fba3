"""Pages answer bad input with a message on the page and a 4xx status, never a traceback or a 500;
the pairs index lists every v1/v2 pair without starting any work."""

from __future__ import annotations

import uuid

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from zootriage.app.db.models import Job
from zootriage.app.db.session import session_scope
from zootriage.app.services.recommendations import weight_pairs


def test_unknown_ids_and_bad_queries_are_4xx_pages(client: TestClient) -> None:
    nobody = uuid.uuid4()
    for path, status, says in (
        (f"/runs/{nobody}", 404, "run_not_found"),
        (f"/gates/{nobody}", 404, "gate_not_found"),
        (f"/compare?runs={nobody}", 404, "run_not_found"),
        ("/compare?runs=not-a-uuid", 422, "is not an id"),
        ("/compare?runs=abc", 422, "too short"),
        ("/compare?runs=" + ",".join(str(uuid.uuid4()) for _ in range(51)), 422, "1 to 50"),
        ("/compare?runs=" + str(nobody) + "&x=nothing", 422, "unknown_marker"),
        ("/runs?marker=nothing", 422, "unknown_marker"),
        ("/runs?min=1", 422, "need a marker"),
        ("/runs?sort=capacity&cursor=garbage", 422, "invalid_cursor"),
        ("/gates?cursor=garbage", 422, "invalid_cursor"),
        ("/recommendations?dataset=nowhere:x", 422, "bad_reference"),
        ("/recommendations?dataset=builtin:mnist&per_class=-3", 422, "per_class"),
    ):
        answer = client.get(path)
        assert answer.status_code == status, (path, answer.status_code)
        assert answer.headers["content-type"].startswith("text/html"), path
        assert says in answer.text, (path, answer.text[-400:])


def test_the_pairs_index_lists_every_pair_and_queues_nothing(client: TestClient, clean_db: str) -> None:
    bare = client.get("/recommendations").text
    assert "<table" not in bare  # no dataset yet: the form, and a link to each pair's own page
    assert all(f'href="/recommendations/{arch}"' in bare for arch in weight_pairs())
    page = client.get("/recommendations?dataset=builtin:mnist&per_class=20")
    assert page.status_code == 200
    assert page.text.count('<tr class="pair" ') == len(weight_pairs()) == 24
    assert page.text.count("not scored yet") == 24
    with session_scope(clean_db) as session:
        assert session.scalar(select(func.count()).select_from(Job)) == 0
