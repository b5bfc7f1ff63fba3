"""Projects and baseline aliases through the API (PostgreSQL, no worker): projects are created and
listed, an alias moves between stored runs with its history kept, a gate against ``alias:NAME``
resolves it in the gate's project and names the run it pointed to, listings filter by project, runs
join projects through the jobs that asked for them, and a key limited to projects sees only those."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select

from tests.integration.access import PUBLIC, app_client, stored_key
from tests.integration.stored_runs import DIGITS, stored_run
from zootriage.app.api_keys import Scope, create_api_key
from zootriage.app.db import job_lifecycle, project_queries
from zootriage.app.db.models import Job, ProjectRun
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings

RULES = ["id_accuracy: max_drop 0.05"]


def _runs(database_url: str) -> tuple[uuid.UUID, uuid.UUID]:
    first = stored_run(database_url, "release-1", {"id_accuracy": 0.90, "dimension": 2.0})
    second = stored_run(database_url, "release-2", {"id_accuracy": 0.91, "dimension": 2.1})
    return first, second


def _gate(candidate: uuid.UUID, baseline: dict[str, Any]) -> dict[str, Any]:
    return {
        "candidate": {"source": "run", "id": str(candidate)},
        "baseline": baseline,
        "dataset": DIGITS,
        "rules": RULES,
    }


def test_projects_are_created_listed_and_named_strictly(api: TestClient) -> None:
    assert [p["name"] for p in api.get("/v1/projects").json()["items"]] == ["default"]
    made = api.post("/v1/projects", json={"name": "vision", "description": "image models"})
    assert made.status_code == 201, made.text
    assert made.headers["Location"] == "/v1/projects/vision"
    assert made.json()["runs"] == 0 and made.json()["description"] == "image models"
    again = api.post("/v1/projects", json={"name": "vision"})
    assert (again.status_code, again.json()["code"]) == (409, "project_exists")
    assert api.post("/v1/projects", json={"name": "Bad Name"}).status_code == 422
    assert [p["name"] for p in api.get("/v1/projects").json()["items"]] == ["default", "vision"]
    missing = api.get("/v1/projects/nope/aliases")
    assert (missing.status_code, missing.json()["code"]) == (404, "project_not_found")
    assert api.get("/v1/runs?project=nope").json()["code"] == "project_not_found"
    assert api.get("/v1/runs?project=BAD!").status_code == 422


def test_an_alias_moves_by_short_id_and_keeps_its_history(api: TestClient, database_url: str) -> None:
    first, second = _runs(database_url)
    path = "/v1/projects/default/aliases/production"
    created = api.put(path, json={"run": str(first)[:8]})  # a short id
    assert created.status_code == 200, created.text
    assert created.json()["run_id"] == str(first)
    assert created.json()["moved"]["from_run_id"] is None
    moved = api.put(path, json={"run": str(second)}).json()
    assert moved["moved"]["from_run_id"] == str(first) and moved["moved"]["to_run_id"] == str(second)
    assert api.put(path, json={"run": str(second)}).json()["moved"] is None  # already there: no move
    assert api.get(path).json()["run_id"] == str(second)
    assert "release-2" in api.get(path).json()["run_label"]
    history = api.get(f"{path}/history").json()
    assert [(m["from_run_id"], m["to_run_id"]) for m in history["moves"]] == [
        (None, str(first)),
        (str(first), str(second)),
    ]
    assert [a["name"] for a in api.get("/v1/projects/default/aliases").json()["items"]] == ["production"]
    unknown = api.put(path, json={"run": "0" * 8})
    assert (unknown.status_code, unknown.json()["code"]) == (404, "run_not_found")
    assert api.get("/v1/projects/default/aliases/nope").json()["code"] == "alias_not_found"
    assert api.put("/v1/projects/default/aliases/Not%20Slug", json={"run": str(first)}).status_code == 422
    with session_scope(database_url) as session:
        events = project_queries.alias_history(session, "default", "production")
        assert [e.to_run_id for e in events] == [first, second]


def test_a_gate_against_an_alias_names_the_run_it_pointed_to(api: TestClient, database_url: str) -> None:
    first, second = _runs(database_url)
    api.post("/v1/projects", json={"name": "vision"})
    api.put("/v1/projects/vision/aliases/production", json={"run": str(first)})
    alias = {"source": "alias", "name": "production"}
    gated = api.post("/v1/gates?project=vision", json=_gate(second, alias))
    assert gated.status_code == 201, gated.text
    assert gated.json()["baseline_run_id"] == str(first)
    assert (gated.json()["baseline_alias"], gated.json()["project"]) == ("production", "vision")
    elsewhere = api.post("/v1/gates", json=_gate(second, alias))  # the default project has no such alias
    assert (elsewhere.status_code, elsewhere.json()["code"]) == (404, "alias_not_found")
    api.put("/v1/projects/vision/aliases/production", json={"run": str(second)})
    later = api.post("/v1/gates?project=vision", json=_gate(second, alias)).json()
    assert later["baseline_run_id"] == str(second)
    assert api.get(f"/v1/gates/{gated.json()['id']}").json()["baseline_run_id"] == str(first)  # kept
    assert len(api.get("/v1/gates?project=vision").json()["items"]) == 2
    assert api.get("/v1/gates?project=default").json()["items"] == []
    listed = {r["id"] for r in api.get("/v1/runs?project=vision").json()["items"]}
    assert listed == {str(first), str(second)}  # aliased and gated there
    assert api.get("/v1/runs?project=default").json()["items"] == []
    with session_scope(database_url) as session:  # the query the trends page reads
        runs, more = project_queries.project_runs(session, "vision", limit=1, descending=False)
        assert [run.id for run in runs] == [first] and more is not None
    as_candidate = api.post("/v1/gates?project=vision", json={**_gate(second, alias), "candidate": alias})
    assert as_candidate.status_code == 422


def test_a_finished_job_adds_its_run_to_every_project_that_asked(api: TestClient, database_url: str) -> None:
    run_id, _ = _runs(database_url)
    api.post("/v1/projects", json={"name": "vision"})
    api.post("/v1/projects", json={"name": "audio"})
    with session_scope(database_url) as session:
        vision = project_queries.project_named(session, "vision")
        audio = project_queries.project_named(session, "audio")
        job = Job(
            request_key="k" * 64, request={}, request_hash="h" * 64, project_id=vision.id, status="running"
        )
        session.add(job)
        session.flush()
        project_queries.join_job(session, audio.id, job)  # audio asked for the same job while it ran
        project_queries.join_job(session, vision.id, job)  # its own project: nothing extra
        assert job_lifecycle.finish(session, job.id, run_id, "r" * 64).moved
        joined = set(session.scalars(select(ProjectRun.project_id).where(ProjectRun.run_id == run_id)))
        assert joined == {vision.id, audio.id}
    assert [r["id"] for r in api.get("/v1/runs?project=audio").json()["items"]] == [str(run_id)]
    with session_scope(database_url) as session:  # a job that names no project is the default one's
        unnamed = Job(request_key="u" * 64, request={}, request_hash="h" * 64)
        session.add(unnamed)
        session.flush()
        assert unnamed.project_id == project_queries.project_named(session, "default").id


def test_a_key_limited_to_projects_sees_and_writes_only_those(
    settings: Settings, clean_db: str, database_url: str
) -> None:
    first, second = _runs(database_url)
    admin = stored_key(database_url, Scope.admin, name="root")
    with app_client(settings, **PUBLIC) as client:
        root = {"X-API-Key": admin}
        assert client.post("/v1/projects", json={"name": "vision"}, headers=root).status_code == 201
        refused = client.post("/v1/api-keys", json={"name": "x", "projects": ["nope"]}, headers=root)
        assert (refused.status_code, refused.json()["code"]) == (404, "project_not_found")
        made = client.post(
            "/v1/api-keys", json={"name": "ci", "scopes": ["write"], "projects": ["vision"]}, headers=root
        )
        assert made.status_code == 201 and made.json()["projects"] == ["vision"]
        ci = {"X-API-Key": made.json()["key"]}
        set_in_vision = client.put(
            "/v1/projects/vision/aliases/production", json={"run": str(first)}, headers=root
        )
        assert set_in_vision.status_code == 200
        for method, path, body in (
            ("GET", "/v1/runs?project=default", None),
            ("GET", "/v1/projects/default/aliases", None),
            ("PUT", "/v1/projects/default/aliases/production", {"run": str(first)}),
            ("POST", "/v1/gates", _gate(first, {"source": "run", "id": str(first)})),
            ("GET", f"/v1/runs/{second}", None),  # only in the default project... in none, in fact
            ("POST", "/v1/projects", {"name": "mine"}),
        ):
            answer = client.request(method, path, json=body, headers=ci)
            assert answer.status_code == 403, (method, path, answer.text)
            assert answer.json()["code"] == "forbidden" and answer.json()["message"]
        assert [p["name"] for p in client.get("/v1/projects", headers=ci).json()["items"]] == ["vision"]
        assert [r["id"] for r in client.get("/v1/runs", headers=ci).json()["items"]] == [str(first)]
        assert client.get(f"/v1/runs/{first}", headers=ci).status_code == 200
        moved = client.put("/v1/projects/vision/aliases/production", json={"run": str(first)}, headers=ci)
        assert moved.status_code == 200 and moved.json()["moved"] is None
        hidden = client.put("/v1/projects/vision/aliases/production", json={"run": str(second)}, headers=ci)
        assert hidden.status_code == 403  # a run outside its projects
        alias = {"source": "alias", "name": "production"}
        gated = client.post("/v1/gates?project=vision", json=_gate(first, alias), headers=ci)
        assert gated.status_code == 201, gated.text
        assert client.get(f"/v1/gates/{gated.json()['id']}", headers=ci).status_code == 200
        with session_scope(database_url) as session:
            jobs = {}
            for name in ("default", "vision"):
                project = project_queries.project_named(session, name)
                job = Job(request_key=name * 8, request={}, request_hash="h", project_id=project.id)
                session.add(job)
                session.flush()
                jobs[name] = str(job.id)
        assert client.get(f"/v1/jobs/{jobs['vision']}", headers=ci).status_code == 200
        assert client.get(f"/v1/jobs/{jobs['default']}", headers=ci).json()["code"] == "forbidden"
        assert client.get(f"/v1/jobs/{jobs['default']}", headers=root).status_code == 200
        assert [j["id"] for j in client.get("/v1/jobs", headers=ci).json()["items"]] == [jobs["vision"]]
        assert {j["id"] for j in client.get("/v1/jobs", headers=root).json()["items"]} >= set(jobs.values())
        # uploads belong to no project: a limited key may not list or read them, an unlimited one may
        for path in ("/v1/checkpoints", f"/v1/checkpoints/{'ab' * 32}", "/uploads"):
            answer = client.get(path, headers=ci)
            assert answer.status_code == 403, (path, answer.text)
        assert client.get("/v1/checkpoints", headers=root).status_code == 200
    with session_scope(database_url) as session:
        key = create_api_key(session, "other", frozenset({Scope.write}), frozenset({"default"}))
        history = project_queries.alias_history(session, "vision", "production")
        assert [(e.actor, e.actor_key_id is not None) for e in history] == [("root", True)]
        assert key.row.projects == ["default"]


def test_the_runs_and_gates_pages_filter_by_project(api: TestClient, database_url: str) -> None:
    first, second = _runs(database_url)
    api.post("/v1/projects", json={"name": "vision"})
    api.put("/v1/projects/vision/aliases/production", json={"run": str(first)})
    gated = api.post("/v1/gates?project=vision", json=_gate(first, {"source": "alias", "name": "production"}))
    assert gated.status_code == 201
    in_vision = api.get("/runs?project=vision")
    assert in_vision.status_code == 200
    assert '<option value="vision" selected>' in in_vision.text.replace("  ", " ")
    assert str(first) in in_vision.text and str(second) not in in_vision.text
    everything = api.get("/runs").text
    assert str(first) in everything and str(second) in everything
    gates = api.get("/gates?project=vision").text
    assert str(gated.json()["id"])[:8] in gates and "alias production" in gates
    assert str(gated.json()["id"])[:8] not in api.get("/gates?project=default").text
    assert api.get("/gates?project=nope").status_code == 404
