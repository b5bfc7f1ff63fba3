"""Names and tags of a run edited after scoring, against the real PostgreSQL: ``PATCH /v1/runs/{id}``
(a merge patch, checked as at submit, behind the write scope) and the labels form of the run's page
(behind the CSRF token); a refusal is a 4xx ``{code, message}`` and changes nothing."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.integration.access import PUBLIC, app_client, stored_key
from tests.integration.stored_runs import stored_run
from zootriage.app.api_keys import Scope
from zootriage.app.db.models import Run
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings

MARKERS: dict[str, float | None] = {"dimension": 2.0, "utilization": 0.4}


def labelled_run(database_url: str, name: str | None, tags: dict[str, str]) -> uuid.UUID:
    return stored_run(database_url, f"labels-{uuid.uuid4()}", MARKERS, name=name, tags=tags)


def labels_in_db(database_url: str, run_id: uuid.UUID) -> tuple[str | None, dict[str, str]]:
    with session_scope(database_url) as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run.name, run.tag_map


def test_a_patch_renames_sets_and_removes_tags_and_leaves_the_rest(client: TestClient, clean_db: str) -> None:
    run_id = labelled_run(clean_db, "first", {"team": "vision", "stage": "ci"})
    patch = {"name": "release 2", "tags": {"stage": "prod", "new": "x"}}
    patched = client.patch(f"/v1/runs/{run_id}", json=patch)
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert (body["name"], body["label"]) == ("release 2", "release 2")
    assert body["tags"] == {"team": "vision", "stage": "prod", "new": "x"}
    assert body["markers"] and body["run_key"]  # the run in full, as GET shows it
    assert labels_in_db(clean_db, run_id) == ("release 2", {"team": "vision", "stage": "prod", "new": "x"})

    kept = client.patch(f"/v1/runs/{run_id}", json={"tags": {"team": None, "absent": None}})
    assert kept.json()["name"] == "release 2"  # a name left out stays
    assert kept.json()["tags"] == {"stage": "prod", "new": "x"}
    cleared = client.patch(f"/v1/runs/{run_id}", json={"name": None})
    assert cleared.json()["name"] is None and cleared.json()["tags"] == {"stage": "prod", "new": "x"}
    assert client.get("/v1/runs?name=release%202").json()["items"] == []
    assert [r["id"] for r in client.get("/v1/runs?tag=stage=prod").json()["items"]] == [str(run_id)]


@pytest.mark.parametrize(
    ("patch", "says"),
    [
        ({"name": " padded"}, "name"),
        ({"name": "x" * 129}, "name"),
        ({"name": ""}, "name"),
        ({"tags": {"Team": "x"}}, "tag key"),
        ({"tags": {"team": "a b"}}, "value"),
        ({"tags": {"Bad Key": None}}, "tag key"),
        ({"tags": {f"k{i}": "v" for i in range(17)}}, "tags"),
        ({"tags": ["team=x"]}, "tags"),
        ({"label": "x"}, "label"),
        ({"run_key": "0" * 64}, "run_key"),  # what was computed is not a label
    ],
)
def test_bad_patches_are_422_and_change_nothing(
    client: TestClient, clean_db: str, patch: dict[str, Any], says: str
) -> None:
    run_id = labelled_run(clean_db, "kept", {"team": "vision"})
    refused = client.patch(f"/v1/runs/{run_id}", json=patch)
    assert (refused.status_code, refused.json()["code"]) == (422, "invalid_request"), refused.text
    assert says in refused.json()["message"]
    assert labels_in_db(clean_db, run_id) == ("kept", {"team": "vision"})


def test_more_tags_than_a_run_may_carry_are_refused(client: TestClient, clean_db: str) -> None:
    tags = {f"k{i}": "v" for i in range(15)}
    run_id = labelled_run(clean_db, None, tags)
    refused = client.patch(f"/v1/runs/{run_id}", json={"tags": {"a": "1", "b": "2"}})
    assert (refused.status_code, refused.json()["code"]) == (422, "too_many_tags"), refused.text
    assert labels_in_db(clean_db, run_id) == (None, tags)
    swapped = client.patch(f"/v1/runs/{run_id}", json={"tags": {"a": "1", "k0": None}})
    assert swapped.status_code == 200 and len(swapped.json()["tags"]) == 15


def test_a_missing_run_is_404_and_a_bad_id_422(client: TestClient, clean_db: str) -> None:
    missing = client.patch(f"/v1/runs/{uuid.uuid4()}", json={"name": "x"})
    assert (missing.status_code, missing.json()["code"]) == (404, "run_not_found")
    bad = client.patch("/v1/runs/not-an-id", json={"name": "x"})
    assert (bad.status_code, bad.json()["code"]) == (422, "invalid_request")


def test_a_patch_needs_the_write_scope(settings: Settings, clean_db: str) -> None:
    run_id = labelled_run(clean_db, "kept", {})
    reader = {"X-API-Key": stored_key(clean_db, Scope.read, name="r")}
    writer = {"X-API-Key": stored_key(clean_db, Scope.write, name="w")}
    with app_client(settings, **PUBLIC) as client:
        anonymous = client.patch(f"/v1/runs/{run_id}", json={"name": "x"})
        assert (anonymous.status_code, anonymous.json()["code"]) == (401, "unauthorized")
        read_only = client.patch(f"/v1/runs/{run_id}", json={"name": "x"}, headers=reader)
        assert (read_only.status_code, read_only.json()["code"]) == (403, "forbidden")
        assert labels_in_db(clean_db, run_id) == ("kept", {})
        allowed = client.patch(f"/v1/runs/{run_id}", json={"name": "x"}, headers=writer)
        assert allowed.status_code == 200 and allowed.json()["name"] == "x"


def _alert(page: str) -> str:
    found = re.search(r'id="labels-error"[^>]*>([^<]*)<', page)
    assert found, page
    return html.unescape(found.group(1))


def test_the_run_page_shows_the_labels_and_its_form_edits_them(client: TestClient, clean_db: str) -> None:
    run_id = labelled_run(clean_db, "first", {"team": "vision", "stage": "ci"})
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    assert "team=vision" in page.text and "RunTag" not in page.text and "object at" not in page.text
    assert 'value="first"' in page.text and 'value="stage=ci, team=vision"' in page.text  # the form
    token = client.cookies.get("zt_csrf")
    assert token

    form = {"csrf": token, "name": "renamed", "tags": "team=audio, owner=ml"}
    saved = client.post(f"/runs/{run_id}/labels", data=form, follow_redirects=False)
    assert (saved.status_code, saved.headers["location"]) == (303, f"/runs/{run_id}")
    assert labels_in_db(clean_db, run_id) == ("renamed", {"team": "audio", "owner": "ml"})  # stage went
    shown = client.get(f"/runs/{run_id}").text
    assert '<span id="run-name">renamed</span>' in shown and "owner=ml" in shown

    bad = client.post(f"/runs/{run_id}/labels", data={**form, "tags": "Team=x"})
    assert bad.status_code == 422 and _alert(bad.text).startswith("invalid_request: tags: tag key")
    assert 'value="Team=x"' in bad.text  # the form comes back as it was sent
    long = client.post(f"/runs/{run_id}/labels", data={**form, "name": "x" * 129})
    assert long.status_code == 422 and _alert(long.text).startswith("invalid_request: name")
    forged = client.post(f"/runs/{run_id}/labels", data={**form, "csrf": "stale", "name": "forged"})
    assert forged.status_code == 403 and _alert(forged.text).startswith("csrf_failed")
    assert labels_in_db(clean_db, run_id) == ("renamed", {"team": "audio", "owner": "ml"})

    cleared = client.post(f"/runs/{run_id}/labels", data={"csrf": token, "name": "", "tags": ""})
    assert cleared.status_code == 200  # followed to the page
    assert labels_in_db(clean_db, run_id) == (None, {})
    missing = client.post(f"/runs/{uuid.uuid4()}/labels", data=form)
    assert missing.status_code == 404
