"""Work queued many jobs at a time lands in the project the request names, and an upload is named by
a unique prefix of its id, through the API in this process (a database of its own, publishing
recorded instead of sent): a sweep's and a recommendation's jobs are in ``?project=`` (checked as for
``POST /v1/jobs``: 403, 404, 422), and a job's checkpoint ``path`` may be a short upload id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from tests.integration.access import public_server, stored_key
from tests.integration.jobs import SWEEP_SCORING
from tests.integration.stored_runs import QUERY
from zootriage.app.api_keys import Scope
from zootriage.app.db import project_queries
from zootriage.app.db.models import Checkpoint, Job, Sweep
from zootriage.app.db.session import session_scope
from zootriage.app.main import create_app
from zootriage.app.settings import Settings
from zootriage.core.catalogue.torchvision import weights_info
from zootriage.core.zoo.weight_caches import hub_checkpoint


@pytest.fixture
def own(settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Settings]:
    with public_server(settings, monkeypatch, tmp_path) as made:
        yield made


@pytest.fixture
def http(own: Settings) -> Iterator[TestClient]:
    stored_key(own.effective_database_url, Scope.admin, name="boot")  # a public server needs a key
    with TestClient(create_app(own), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def keys(http: TestClient, own: Settings) -> dict[str, dict[str, str]]:
    """Headers of an admin key and of a write key limited to the project ``audio``; the projects
    ``vision`` and ``audio`` exist."""
    root = {"X-API-Key": stored_key(own.effective_database_url, Scope.admin, name="root")}
    for name in ("vision", "audio"):
        assert http.post("/v1/projects", json={"name": name}, headers=root).status_code == 201
    made = http.post(
        "/v1/api-keys", json={"name": "audio-ci", "scopes": ["write"], "projects": ["audio"]}, headers=root
    )
    assert made.status_code == 201, made.text
    return {"root": root, "audio": {"X-API-Key": made.json()["key"]}}


@pytest.fixture
def upload(http: TestClient, keys: dict[str, dict[str, str]], mnist_program: Path) -> dict[str, Any]:
    answer = http.post(
        "/v1/checkpoints", files={"file": ("m.pt2", mnist_program.read_bytes())}, headers=keys["root"]
    )
    assert answer.status_code in (200, 201), answer.text
    return dict(answer.json())


def _job_projects(database_url: str) -> dict[str, str]:
    """Each job's id and the name of its project."""
    with session_scope(database_url) as session:
        names = {p.id: p.name for p in project_queries.list_projects(session, None)}
        return {str(job.id): names[job.project_id] for job in session.scalars(select(Job))}


def _sweep_projects(database_url: str) -> dict[str, str]:
    """Each sweep's id and the name of the project it was created in."""
    with session_scope(database_url) as session:
        names = {p.id: p.name for p in project_queries.list_projects(session, None)}
        return {str(sweep.id): names[sweep.project_id] for sweep in session.scalars(select(Sweep))}


def _count(database_url: str, table: type[Sweep] | type[Job]) -> int:
    with session_scope(database_url) as session:
        return int(session.scalar(select(func.count()).select_from(table)) or 0)


def test_a_sweep_queues_its_jobs_in_the_project_it_names(
    http: TestClient, own: Settings, keys: dict[str, dict[str, str]], upload: dict[str, Any]
) -> None:
    url = own.effective_database_url
    model = {"source": "checkpoint", "path": upload["model_path"]}
    body = {"models": [model], **SWEEP_SCORING}
    for query, headers, status, code in (
        ("?project=vision", keys["audio"], 403, "forbidden"),  # a project the key may not use
        ("", keys["audio"], 403, "forbidden"),  # its default would be the default project: not its own
        ("?project=nope", keys["root"], 404, "project_not_found"),
        ("?project=Not%20A%20Slug", keys["root"], 422, "invalid_request"),
    ):
        refused = http.post(f"/v1/sweeps{query}", json=body, headers=headers)
        assert (refused.status_code, refused.json()["code"]) == (status, code), (query, refused.text)
    assert _count(url, Sweep) == 0 and _count(url, Job) == 0

    made = http.post("/v1/sweeps?project=vision", json=body, headers=keys["root"])
    assert made.status_code == 201, made.text
    jobs = [member["job"]["id"] for member in made.json()["jobs"]]
    assert len(jobs) == 1 and _job_projects(url) == {jobs[0]: "vision"}
    listed = http.get("/v1/jobs?project=vision", headers=keys["root"]).json()["items"]
    assert [job["id"] for job in listed] == jobs
    assert http.get("/v1/jobs?project=default", headers=keys["root"]).json()["items"] == []
    assert http.get(f"/v1/jobs/{jobs[0]}", headers=keys["audio"]).json()["code"] == "forbidden"

    # The limited key's own sweep (another seed: new jobs) lands in its project, which it then sees.
    own_body = {**body, "sampling": {**SWEEP_SCORING["sampling"], "seed": 1}}
    mine = http.post("/v1/sweeps?project=audio", json=own_body, headers=keys["audio"])
    assert mine.status_code == 201, mine.text
    mine_jobs = [member["job"]["id"] for member in mine.json()["jobs"]]
    assert _job_projects(url) == {jobs[0]: "vision", mine_jobs[0]: "audio"}
    assert [j["id"] for j in http.get("/v1/jobs", headers=keys["audio"]).json()["items"]] == mine_jobs

    # Without ?project= an unlimited key's sweep is in the default project, as a single job would be.
    plain = http.post(
        "/v1/sweeps",
        json={**body, "sampling": {**SWEEP_SCORING["sampling"], "seed": 2}},
        headers=keys["root"],
    )
    assert plain.status_code == 201, plain.text
    assert _job_projects(url)[plain.json()["jobs"][0]["job"]["id"]] == "default"
    made_in = {made.json()["id"]: "vision", mine.json()["id"]: "audio", plain.json()["id"]: "default"}
    assert _sweep_projects(url) == made_in


def test_a_recommendation_queues_its_runs_in_the_project_it_names(
    http: TestClient, own: Settings, keys: dict[str, dict[str, str]]
) -> None:
    for weights in ("IMAGENET1K_V1", "IMAGENET1K_V2"):  # the static checks find both weights
        cached = hub_checkpoint(weights_info("mobilenet_v2", weights).file)
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.touch()
    path = f"/v1/recommendations/mobilenet_v2?{QUERY}"
    refused = http.post(f"{path}&project=vision", headers=keys["audio"])
    assert (refused.status_code, refused.json()["code"]) == (403, "forbidden")
    assert http.post(path, headers=keys["audio"]).json()["code"] == "forbidden"  # no default for it
    assert http.post(f"{path}&project=nope", headers=keys["root"]).json()["code"] == "project_not_found"
    assert _count(own.effective_database_url, Job) == 0

    queued = http.post(f"{path}&project=vision", headers=keys["root"])
    assert queued.status_code == 202, queued.text
    jobs = {job["id"] for job in queued.json()["jobs"]}
    assert len(jobs) == 2
    assert _job_projects(own.effective_database_url) == dict.fromkeys(jobs, "vision")
    mine = http.post(f"{path}&project=audio", headers=keys["audio"])  # the same jobs, joined
    assert mine.status_code == 202 and {job["id"] for job in mine.json()["jobs"]} == jobs
    for job in jobs:  # joined by its project: the key may follow them
        assert http.get(f"/v1/jobs/{job}", headers=keys["audio"]).status_code == 200


def test_a_job_names_its_upload_by_a_unique_prefix(
    http: TestClient, own: Settings, keys: dict[str, dict[str, str]], upload: dict[str, Any]
) -> None:
    root, full = keys["root"], upload["id"]
    short = {"model": {"source": "checkpoint", "path": f"{full[:10]}.pt2"}, **SWEEP_SCORING}
    queued = http.post("/v1/jobs", json=short, headers=root)
    assert queued.status_code == 202, queued.text
    job = queued.json()
    with session_scope(own.effective_database_url) as session:
        stored = session.get(Job, job["id"])
        assert stored is not None and stored.request["model"]["path"] == upload["model_path"]
    # The same request with the full id is the same job.
    whole = {**short, "model": {"source": "checkpoint", "path": upload["model_path"]}}
    again = http.post("/v1/jobs", json=whole, headers=root)
    assert again.status_code == 202 and again.json()["id"] == job["id"]

    # Two uploads beginning with the same eight digits, and a prefix that names none.
    twin = "0123abcd" if not full.startswith("0123abcd") else "4567abcd"
    with session_scope(own.effective_database_url) as session:
        for tail in ("0", "1"):
            session.add(Checkpoint(sha256=twin + tail * 56, size_bytes=1, format="torch_export", tags={}))
    ambiguous = http.post(
        "/v1/jobs", json={**short, "model": {"source": "checkpoint", "path": f"{twin}.pt2"}}, headers=root
    )
    assert (ambiguous.status_code, ambiguous.json()["code"]) == (409, "ambiguous_id"), ambiguous.text
    assert "2 uploads" in ambiguous.json()["message"]
    absent = "f" * 9 if not full.startswith("f" * 9) else "e" * 9
    unknown = http.post(
        "/v1/jobs", json={**short, "model": {"source": "checkpoint", "path": f"{absent}.pt2"}}, headers=root
    )
    assert (unknown.status_code, unknown.json()["code"]) == (404, "unknown_checkpoint"), unknown.text
    assert http.get(f"/v1/checkpoints/{full[:10]}", headers=root).json()["id"] == full


def test_a_key_limited_to_projects_sees_only_their_sweeps(
    http: TestClient, own: Settings, keys: dict[str, dict[str, str]], upload: dict[str, Any]
) -> None:
    root, audio = keys["root"], keys["audio"]
    model = {"source": "checkpoint", "path": upload["model_path"]}

    def sweep(project: str, seed: int, headers: dict[str, str]) -> str:
        body = {"models": [model], **SWEEP_SCORING, "sampling": {**SWEEP_SCORING["sampling"], "seed": seed}}
        made = http.post(f"/v1/sweeps?project={project}", json=body, headers=headers)
        assert made.status_code == 201, made.text
        return str(made.json()["id"])

    theirs, mine = sweep("vision", 10, root), sweep("audio", 11, audio)

    def listed(query: str, headers: dict[str, str]) -> list[str]:
        answer = http.get(f"/v1/sweeps{query}", headers=headers)
        assert answer.status_code == 200, answer.text
        return [item["id"] for item in answer.json()["items"]]

    assert listed("", audio) == [mine]
    assert listed("?project=audio", audio) == [mine]
    refused = http.get("/v1/sweeps?project=vision", headers=audio)
    assert (refused.status_code, refused.json()["code"]) == (403, "forbidden")
    assert listed("", root) == [mine, theirs]  # newest first: every project
    assert listed("?project=vision", root) == [theirs]
    assert listed("?project=default", root) == []

    # A sweep whose one model joins the other project's active job has no job of its own: it is still
    # in the project it was created in alone; the project whose job it joined never sees it.
    joined = sweep("audio", 10, audio)
    assert listed("", audio) == [joined, mine]
    assert http.get(f"/v1/sweeps/{joined}", headers=audio).json()["jobs"][0]["status"] == "queued"
    assert listed("?project=vision", root) == [theirs] and listed("?project=audio", root) == [joined, mine]
    made = http.post(
        "/v1/api-keys", json={"name": "vision-ci", "scopes": ["read"], "projects": ["vision"]}, headers=root
    )
    assert made.status_code == 201, made.text
    vision = {"X-API-Key": made.json()["key"]}
    assert listed("", vision) == [theirs]
    for path in (f"/v1/sweeps/{joined}", f"/v1/sweeps/{joined[:8]}"):
        read = http.get(path, headers=vision)
        assert (read.status_code, read.json()["code"]) == (403, "forbidden"), read.text
    assert http.get(f"/v1/sweeps/{theirs}", headers=vision).json()["id"] == theirs

    # Another project's sweep is forbidden to read or cancel (as its jobs are), by id or by prefix.
    for path in (f"/v1/sweeps/{theirs}", f"/v1/sweeps/{theirs[:8]}"):
        read = http.get(path, headers=audio)
        assert (read.status_code, read.json()["code"]) == (403, "forbidden"), read.text
    cancel = http.delete(f"/v1/sweeps/{theirs}", headers=audio)
    assert (cancel.status_code, cancel.json()["code"]) == (403, "forbidden"), cancel.text
    assert http.get(f"/v1/sweeps/{theirs}", headers=root).json()["status"] == "running"  # not cancelled

    # Its own sweep it reads and cancels; the unlimited key reads and cancels any.
    assert http.get(f"/v1/sweeps/{mine}", headers=audio).json()["id"] == mine
    assert http.delete(f"/v1/sweeps/{mine}", headers=audio).json()["status"] == "cancelled"
    assert http.get(f"/v1/sweeps/{mine}", headers=root).status_code == 200
    assert http.delete(f"/v1/sweeps/{theirs}", headers=root).json()["status"] == "cancelled"
