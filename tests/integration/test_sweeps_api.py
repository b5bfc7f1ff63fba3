"""Sweeps through the API in this process, publishing recorded instead of sent: bounds and refusals
write nothing, a sweep holds all but ``sweep_in_flight`` of its jobs, and a job reaching a final state
(a cancel, a worker's end, or a lost hook repaired by the reaper) publishes the next."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from tests.integration.databases import migrate, scratch_database
from tests.integration.jobs import SWEEP_SCORING, count
from tests.integration.stack import TRIAGE_UPLOAD_LIMIT
from zootriage.app.db.models import Job, JobStatus, Sweep
from zootriage.app.db.session import session_scope
from zootriage.app.main import create_app
from zootriage.app.services import jobs as job_service
from zootriage.app.services import reaper, sweep_queue
from zootriage.app.settings import Settings


@pytest.fixture
def own(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Settings, list[str]]]:
    """Settings on a database of this test alone (no stack's reaper sweeps it), and the list of the
    job ids the sweep queue publishes (nothing reaches a broker)."""
    published: list[str] = []

    def record(_settings: Settings, job_id: str, _publication: int, _features: Any = None) -> None:
        published.append(job_id)

    monkeypatch.setattr(sweep_queue, "enqueue_score", record)
    monkeypatch.setattr(job_service, "enqueue_score", record)
    with scratch_database() as url:
        migrate(url)
        yield (
            settings.model_copy(
                update={
                    "database_url": url,
                    "upload_limit_bytes": TRIAGE_UPLOAD_LIMIT,
                    "reaper_interval_s": 3600,
                }
            ),
            published,
        )


@pytest.fixture
def http(own: tuple[Settings, list[str]]) -> Iterator[TestClient]:
    with TestClient(create_app(own[0]), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def models(http: TestClient, digit_programs: dict[str, Path]) -> list[dict[str, Any]]:
    """The three digit programs uploaded, as checkpoint references."""
    refs = []
    for path in digit_programs.values():
        answer = http.post("/v1/checkpoints", files={"file": (path.name, path.read_bytes())})
        assert answer.status_code in (200, 201), answer.text
        refs.append({"source": "checkpoint", "path": answer.json()["model_path"]})
    return refs


@pytest.mark.parametrize(
    ("models", "status", "code"),
    [
        ({"timm_filter": "no_such_architecture_xyz*"}, 422, "no_models"),
        ({"timm_filter": "*"}, 422, "too_many_models"),
        ({"timm_filter": "resnet50;x"}, 422, None),
        ({"preset": "v2v3"}, 422, None),
        ([{"source": "timm", "name": f"resnet{d}"} for d in range(65)], 422, None),
        ([], 422, None),
        ([{"source": "timm", "name": "resnet18"}] * 2, 422, "duplicate_candidates"),
        (
            [{"source": "torchvision", "arch": "resnet50", "weights": "IMAGENET1K_V2"}],
            404,
            "weights_not_available",
        ),
        ([{"source": "torchvision", "arch": "nonet", "weights": "IMAGENET1K_V1"}], 404, "unknown_model"),
    ],
    ids=[
        "filter-empty",
        "filter-too-wide",
        "filter-bad",
        "preset-unknown",
        "list-too-long",
        "list-empty",
        "list-duplicate",
        "weights-missing",
        "unknown-arch",
    ],
)
def test_refused_sweeps_write_nothing(
    http: TestClient,
    own: tuple[Settings, list[str]],
    models: Any,
    status: int,
    code: str | None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))  # no torchvision weights: nothing could be scored
    answer = http.post("/v1/sweeps", json={"models": models, **SWEEP_SCORING})
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) >= {"code", "message"}
    if code is not None:
        assert body["code"] == code
    url = own[0].effective_database_url
    assert count(url, Sweep) == 0 and count(url, Job) == 0 and own[1] == []


def test_preset_needs_every_pair_available(
    http: TestClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The preset expands to 48 torchvision models; none of their weights are here, so it is refused
    whole, naming the first model."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    answer = http.post("/v1/sweeps", json={"models": {"preset": "v1v2"}, **SWEEP_SCORING})
    assert answer.status_code == 404, answer.text
    assert answer.json()["code"] == "weights_not_available"
    assert answer.json()["message"].startswith("model 0 (")


def test_a_sweep_publishes_in_flight_jobs_and_the_next_when_one_ends(
    http: TestClient, own: tuple[Settings, list[str]], models: list[dict[str, Any]]
) -> None:
    settings, published = own
    assert settings.sweep_in_flight == 2
    answer = http.post(
        "/v1/sweeps", json={"models": models, **SWEEP_SCORING, "name": "digits", "tags": {"team": "a"}}
    )
    assert answer.status_code == 201, answer.text
    sweep = answer.json()
    assert answer.headers["Location"] == f"/v1/sweeps/{sweep['id']}"
    jobs = [member["job"]["id"] for member in sweep["jobs"]]
    assert len(jobs) == 3 and published == jobs[:2]
    assert [m["status"] for m in sweep["jobs"]] == ["queued", "queued", "held"]
    assert sweep["progress"] == {
        "total": 3,
        "counts": {"queued": 2, "held": 1},
        "finished": 0,
        "fraction": 0.0,
    }
    assert sweep["status"] == "running" and sweep["ranking"] is None and sweep["name"] == "digits"
    assert all(m["job"]["tags"] == {"team": "a"} for m in sweep["jobs"])

    # A second identical sweep joins the same jobs: nothing new is queued or published.
    again = http.post("/v1/sweeps", json={"models": models, **SWEEP_SCORING}).json()
    assert [m["job"]["id"] for m in again["jobs"]] == jobs and published == jobs[:2]

    # Cancelling one in-flight job through the jobs API publishes the held one.
    assert http.delete(f"/v1/jobs/{jobs[0]}").status_code == 200
    assert published == jobs
    state = http.get(f"/v1/sweeps/{sweep['id']}").json()
    assert state["progress"]["counts"] == {"cancelled": 1, "queued": 2}
    assert abs(state["progress"]["fraction"] - 1 / 3) < 1e-12

    listed = http.get("/v1/sweeps?limit=1").json()
    assert len(listed["items"]) == 1 and listed["next_cursor"]
    rest = http.get(f"/v1/sweeps?limit=1&cursor={listed['next_cursor']}").json()
    assert {listed["items"][0]["id"], rest["items"][0]["id"]} == {sweep["id"], again["id"]}
    assert rest["next_cursor"] is None

    cancelled = http.delete(f"/v1/sweeps/{sweep['id']}")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["progress"]["counts"] == {"cancelled": 3}
    assert http.delete(f"/v1/sweeps/{sweep['id']}").json()["code"] == "sweep_finished"
    assert http.get(f"/v1/sweeps/{sweep['id']}").json()["ranking"] is None  # no run finished
    assert http.get("/v1/sweeps/00000000-0000-0000-0000-000000000000").json()["code"] == "sweep_not_found"


def test_the_reaper_repairs_a_lost_publish_hook(
    http: TestClient, own: tuple[Settings, list[str]], models: list[dict[str, Any]]
) -> None:
    """A worker killed between storing its job's end and publishing the next: the reaper's pass does it."""
    settings, published = own
    sweep = http.post("/v1/sweeps", json={"models": models, **SWEEP_SCORING}).json()
    jobs = [member["job"]["id"] for member in sweep["jobs"]]
    assert published == jobs[:2]
    assert reaper.sweep(settings).published == []  # in flight: nothing to repair
    with session_scope(settings.effective_database_url) as session:
        session.execute(update(Job).where(Job.id == jobs[1]).values(status=JobStatus.failed.value))
    assert [str(job) for job in reaper.sweep(settings).published] == [jobs[2]]
    assert published == jobs
    assert reaper.sweep(settings).published == []


def test_asking_for_a_held_job_publishes_it_at_once(
    http: TestClient, own: tuple[Settings, list[str]], models: list[dict[str, Any]]
) -> None:
    """A user submitting exactly what a sweep holds back joins that job, and does not wait for the sweep."""
    settings, published = own
    sweep = http.post("/v1/sweeps", json={"models": models, **SWEEP_SCORING}).json()
    jobs = [member["job"]["id"] for member in sweep["jobs"]]
    assert published == jobs[:2]
    single = http.post("/v1/jobs", json={"model": models[2], **SWEEP_SCORING})
    assert single.status_code == 202 and single.json()["id"] == jobs[2]
    assert published == jobs
    state = http.get(f"/v1/sweeps/{sweep['id']}").json()
    assert state["progress"]["counts"] == {"queued": 3}
    assert count(settings.effective_database_url, Job) == 3
