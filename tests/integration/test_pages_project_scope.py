"""The pages keep a key limited to projects inside them, as the API does: a run or job of another
project cannot be shown, relabelled, archived, cancelled, compared, back-tested or listed (home page,
live jobs table, CSV), and the submit form puts a job in a project the key may use. Each of these
answered a key limited to ``alpha`` with ``beta``'s data, or changed it, before (an audit's
findings); the admin key still sees everything."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from tests.integration.access import public_server, stored_key
from tests.integration.jobs import job_body
from tests.integration.models import place_torchvision_weights
from tests.integration.stored_runs import QUERY, stored_run
from zootriage.app.api_keys import Scope
from zootriage.app.db import project_queries
from zootriage.app.db.models import Job, Project, Run
from zootriage.app.db.session import session_scope
from zootriage.app.main import create_app
from zootriage.app.settings import Settings
from zootriage.app.ui.session import CSRF_COOKIE, CSRF_HEADER

CSRF = "test-csrf-token"
MARKERS = {"dimension": 10.0, "utilization": 0.4, "id_accuracy": 0.9}


@pytest.fixture
def own(settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Settings]:
    with public_server(settings, monkeypatch, tmp_path) as made:
        yield made


@pytest.fixture
def world(own: Settings, mnist_program: Path) -> Iterator[dict[str, Any]]:
    """Projects ``alpha`` and ``beta``, a run in each, a queued job in ``beta``; an admin key and a
    write key limited to ``alpha``, each with its headers and a CSRF cookie."""
    url = own.effective_database_url
    root = {"X-API-Key": stored_key(url, Scope.admin, name="root")}
    with TestClient(create_app(own), raise_server_exceptions=False) as client:
        client.cookies.set(CSRF_COOKIE, CSRF)
        for name in ("alpha", "beta"):
            assert client.post("/v1/projects", json={"name": name}, headers=root).status_code == 201
        made = client.post(
            "/v1/api-keys", json={"name": "alpha-rw", "scopes": ["write"], "projects": ["alpha"]},
            headers=root,
        )
        assert made.status_code == 201, made.text
        upload = client.post(
            "/v1/checkpoints", files={"file": ("m.pt2", mnist_program.read_bytes())}, headers=root
        ).json()
        model = {"source": "checkpoint", "path": upload["model_path"]}
        job = client.post("/v1/jobs?project=beta", json=job_body(model, seed=7), headers=root)
        assert job.status_code == 202, job.text
        runs = {n: stored_run(url, f"run-{n}", MARKERS, name=f"secret-{n}") for n in ("alpha", "beta")}
        with session_scope(url) as session:
            ids = {p.name: p.id for p in session.scalars(select(Project))}
            for name, run_id in runs.items():
                project_queries.join_runs(session, ids[name], [run_id])
        yield {
            "client": client, "url": url, "root": root, "alpha": {"X-API-Key": made.json()["key"]},
            "runs": runs, "job": job.json()["id"], "model": model,
        }


def _run(url: str, run_id: uuid.UUID) -> Run:
    with session_scope(url) as session:
        found = session.get(Run, run_id)
        assert found is not None
        session.expunge(found)
        return found


def test_a_run_of_another_project_is_neither_shown_nor_changed(world: dict[str, Any]) -> None:
    client, alpha, beta = world["client"], world["alpha"], world["runs"]["beta"]
    for path in (f"/runs/{beta}", f"/runs/{str(beta)[:8]}"):
        page = client.get(path, headers=alpha, follow_redirects=False)
        assert page.status_code == 403 and "secret-beta" not in page.text, path
    assert client.get(f"/runs/{world['runs']['alpha']}", headers=alpha).status_code == 200
    assert "secret-beta" in client.get(f"/runs/{beta}", headers=world["root"]).text
    form = {"csrf": CSRF, "name": "taken", "tags": "", "description": ""}
    attempts = (("labels", form), ("labels", {**form, "csrf": "wrong"}), ("archive", {"csrf": CSRF}))
    for action, sent in attempts:
        answer = client.post(f"/runs/{beta}/{action}", data=sent, headers=alpha, follow_redirects=False)
        assert answer.status_code == 403 and "secret-beta" not in answer.text, (action, answer.text)
    stored = _run(world["url"], beta)
    assert stored.name == "secret-beta" and stored.archived_at is None


def test_a_job_of_another_project_is_neither_listed_nor_cancelled(world: dict[str, Any]) -> None:
    client, alpha, job_id = world["client"], world["alpha"], world["job"]
    assert job_id not in client.get("/ui/jobs", headers=alpha).text
    assert job_id in client.get("/ui/jobs", headers=world["root"]).text
    answer = client.post(f"/ui/jobs/{job_id}/cancel", headers={**alpha, CSRF_HEADER: CSRF})
    assert "forbidden" in answer.text
    with session_scope(world["url"]) as session:
        assert session.get(Job, uuid.UUID(job_id)).status == "queued"  # type: ignore[union-attr]


def test_listings_show_only_the_keys_projects(world: dict[str, Any]) -> None:
    client, alpha, runs = world["client"], world["alpha"], world["runs"]
    home = client.get("/", headers=alpha).text
    assert str(runs["alpha"]) in home and str(runs["beta"]) not in home and world["job"] not in home
    assert str(runs["beta"]) in client.get("/", headers=world["root"]).text
    table = client.get("/runs.csv", headers=alpha).text
    assert str(runs["alpha"]) in table and str(runs["beta"]) not in table
    assert client.get("/runs.csv?project=beta", headers=alpha).status_code == 403
    assert str(runs["beta"]) in client.get("/runs.csv", headers=world["root"]).text


def test_runs_of_another_project_are_neither_compared_nor_back_tested(world: dict[str, Any]) -> None:
    client, alpha, runs = world["client"], world["alpha"], world["runs"]
    compared = client.get(f"/compare?runs={runs['alpha']},{str(runs['beta'])[:8]}", headers=alpha)
    assert compared.status_code == 403 and "secret-beta" not in compared.text
    outcomes = {str(runs["alpha"]): 0.5, str(runs["beta"]): 0.6, str(uuid.uuid4()): 0.7}
    api = client.post("/v1/backtests", json={"outcomes": outcomes}, headers=alpha)
    assert api.status_code == 403, api.text
    assert str(runs["beta"]) in api.json()["message"]  # the first it may not use; nothing on the made-up id
    lines = "\n".join(f"{run_id},{value}" for run_id, value in outcomes.items())
    page = client.post("/backtests", data={"csrf": CSRF, "outcomes": lines}, headers=alpha)
    assert page.status_code == 403 and "forbidden" in page.text


def test_the_submit_form_puts_a_job_in_a_project_the_key_may_use(world: dict[str, Any]) -> None:
    client, alpha = world["client"], {**world["alpha"], CSRF_HEADER: CSRF}  # the form posts through HTMX
    form = {"model_source": "checkpoint", "checkpoint": world["model"]["path"], "dataset": "mnist"}
    refused = client.post("/ui/jobs", data=form, headers=alpha)
    errors = re.findall(r'role="alert">([^<]+)<', refused.text)
    assert any("may use only the projects alpha" in error for error in errors), errors
    assert "forbidden" in client.post("/ui/jobs", data={**form, "project": "beta"}, headers=alpha).text
    queued = client.post("/ui/jobs", data={**form, "project": "alpha"}, headers=alpha)
    assert "queued job" in queued.text, queued.text
    with session_scope(world["url"]) as session:
        names = {p.id: p.name for p in session.scalars(select(Project))}
        projects = sorted(names[job.project_id] for job in session.scalars(select(Job)))
    assert projects == ["alpha", "beta"]


def test_recommendations_read_only_the_runs_of_the_keys_projects(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """Both weights of mobilenet_v2 stored in ``beta``: a key limited to ``alpha`` gets no verdict and no run
    id from them, on the API or the pages, until it asks for the pair in its own project, which joins
    the stored runs to ``alpha`` (nothing is recomputed)."""
    client, url, alpha, root = world["client"], world["url"], world["alpha"], world["root"]
    runs = []
    for seed, (weights, d, u) in enumerate((("IMAGENET1K_V1", 1.0, 0.2), ("IMAGENET1K_V2", 1.5, 0.3))):
        model = {"source": "torchvision", "arch": "mobilenet_v2", "weights": weights}
        markers = {"dimension": d, "utilization": u}
        runs.append(stored_run(url, f"mobilenet_v2-{weights}", markers, model=model))
        place_torchvision_weights(tmp_path, "mobilenet_v2", weights, seed)  # the server's TORCH_HOME
    with session_scope(url) as session:
        beta = project_queries.project_named(session, "beta").id
        project_queries.join_runs(session, beta, runs)

    def seen(headers: dict[str, str]) -> tuple[int, Any, str, str]:
        one = client.get(f"/v1/recommendations/mobilenet_v2?{QUERY}", headers=headers)
        listed = client.get(f"/v1/recommendations?{QUERY}&limit=100", headers=headers).json()["items"]
        verdict = next(item["verdict"] for item in listed if item["architecture"] == "mobilenet_v2")
        pages = client.get(f"/recommendations?{QUERY}", headers=headers).text
        pages += client.get(f"/recommendations/mobilenet_v2?{QUERY}", headers=headers).text
        return one.status_code, verdict, one.text, pages

    status, verdict, answer, pages = seen(alpha)
    assert (status, verdict) == (404, None) and "not_scored" in answer
    assert not any(str(run_id) in answer + pages for run_id in runs)
    other = client.get(f"/v1/recommendations/mobilenet_v2?{QUERY}&project=beta", headers=alpha)
    assert other.status_code == 403
    status, verdict, answer, pages = seen(root)
    assert status == 200 and verdict is not None and all(str(run_id) in pages for run_id in runs)
    asked = client.post(f"/v1/recommendations/mobilenet_v2?{QUERY}&project=alpha", headers=alpha)
    assert asked.status_code == 200, asked.text
    status, verdict, answer, pages = seen(alpha)
    assert status == 200 and verdict is not None and all(str(run_id) in pages for run_id in runs)
    with session_scope(url) as session:
        assert session.scalar(select(func.count()).select_from(Job)) == 1  # beta's queued job alone
