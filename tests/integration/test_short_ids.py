"""Short ids against the real PostgreSQL: every route that takes a run, job, upload, gate or sweep id
takes a unique prefix of 8 or more hex digits (resolved once, by ``app.services.short_ids``); a prefix
two ids share is 409 ``ambiguous_id`` naming how many, a shorter or malformed one 422, an unknown one
the kind's 404. The pages redirect a prefix to the full id."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from tests.integration.jobs import job_body
from tests.integration.stored_runs import DIGITS, PROTOCOL, SAMPLING, stored_run
from zootriage.app.db.models import Checkpoint, Run, Sweep
from zootriage.app.db.session import session_scope

MARKERS: dict[str, float | None] = {"dimension": 2.0, "id_accuracy": 0.9}
TWINS = (uuid.UUID("abcdef01-0000-4000-8000-000000000000"), uuid.UUID("abcdef01-ffff-4000-8000-00000000000f"))


@pytest.fixture
def unpublished(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs are created but not sent to a broker (nothing here is computed)."""
    import zootriage.app.services.jobs as jobs

    monkeypatch.setattr(jobs, "enqueue_score", lambda *_args, **_kwargs: None)


def test_a_unique_prefix_names_a_run_in_every_run_route(client: TestClient, clean_db: str) -> None:
    run_id = stored_run(clean_db, "prefixed", MARKERS, run_id=TWINS[0])
    stored_run(clean_db, "other", MARKERS, run_id=uuid.UUID("12345678-0000-4000-8000-000000000000"))
    full = str(run_id)
    for typed in ("abcdef01", "ABCDEF01", "abcdef01-0000", "abcdef01-0000-4", full, full.replace("-", "")):
        answer = client.get(f"/v1/runs/{typed}")
        assert answer.status_code == 200, (typed, answer.text)
        assert answer.json()["id"] == full
    assert client.patch("/v1/runs/abcdef010", json={"name": "by prefix"}).json()["name"] == "by prefix"
    assert client.post("/v1/runs/abcdef01/archive").json()["archived_at"] is not None
    assert client.post("/v1/runs/abcdef01/restore").json()["archived_at"] is None
    page = client.get("/runs/abcdef01", follow_redirects=False)
    assert (page.status_code, page.headers["location"]) == (303, f"/runs/{full}")
    assert client.get("/runs/abcdef01").status_code == 200


def test_a_prefix_two_runs_share_is_409_naming_how_many(client: TestClient, clean_db: str) -> None:
    for i, run_id in enumerate(TWINS):
        stored_run(clean_db, f"twin-{i}", MARKERS, run_id=run_id)
    for typed in ("abcdef01", "abcdef01-"):
        answer = client.get(f"/v1/runs/{typed}")
        assert (answer.status_code, answer.json()["code"]) == (409, "ambiguous_id"), answer.text
        message = answer.json()["message"]
        assert message.startswith("2 runs have ids beginning with abcdef01")
        assert all(str(twin) in message for twin in TWINS)
    assert client.patch("/v1/runs/abcdef01", json={"name": "x"}).json()["code"] == "ambiguous_id"
    assert client.post("/v1/runs/abcdef01/archive").json()["code"] == "ambiguous_id"
    assert client.get("/v1/runs/abcdef01-f").json()["id"] == str(TWINS[1])  # one digit more decides
    assert client.get("/v1/runs/abcdef010").json()["id"] == str(TWINS[0])
    page = client.get("/runs/abcdef01")
    assert page.status_code == 409 and "ambiguous_id" in page.text
    with session_scope(clean_db) as session:  # the ambiguous patch changed nothing
        assert [run.name for run in session.scalars(select(Run))] == [None, None]


@pytest.mark.parametrize(
    ("typed", "status", "code", "says"),
    [
        ("abcdef0", 422, "invalid_request", "too short"),
        ("abcdefgh", 422, "invalid_request", "is not an id"),
        ("abcd-ef01", 422, "invalid_request", "dashes"),
        ("abcdef01" * 4 + "0", 422, "invalid_request", "is not an id"),
        ("a" * 81, 422, "invalid_request", "run_id"),
        ("00000000", 404, "run_not_found", "no run id begins with 00000000"),
        (str(uuid.UUID(int=7)), 404, "run_not_found", "no run"),
    ],
)
def test_short_malformed_and_unknown_ids_are_refused(
    client: TestClient, clean_db: str, typed: str, status: int, code: str, says: str
) -> None:
    stored_run(clean_db, "only", MARKERS, run_id=TWINS[0])
    answer = client.get(f"/v1/runs/{typed}")
    assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
    assert says in answer.json()["message"]


def _checkpoint(sha256: str) -> Checkpoint:
    return Checkpoint(
        sha256=sha256, size_bytes=10, format="torch_export", filename=f"{sha256[:4]}.pt2", tags={}
    )


def test_uploads_take_a_prefix_of_their_hash(client: TestClient, clean_db: str) -> None:
    ids = ["ab" * 32, "ab" * 4 + "cd" * 28, "ff" * 32]
    with session_scope(clean_db) as session:
        session.add_all([_checkpoint(sha256) for sha256 in ids])
    found = client.get(f"/v1/checkpoints/{'ff' * 4}")
    assert found.status_code == 200, found.text
    assert (found.json()["id"], found.json()["model_path"]) == (ids[2], ids[2] + ".pt2")
    assert client.get(f"/v1/checkpoints/{ids[0]}").json()["id"] == ids[0]
    assert client.get(f"/v1/checkpoints/{'AB' * 5}").json()["id"] == ids[0]
    twins = client.get(f"/v1/checkpoints/{'ab' * 4}")
    assert (twins.status_code, twins.json()["code"]) == (409, "ambiguous_id")
    assert twins.json()["message"].startswith("2 uploads have ids beginning with abababab")
    for typed, status, code in (
        ("abababa", 422, "invalid_request"),
        ("ab" * 33, 422, "invalid_request"),
        ("0" * 8, 404, "checkpoint_not_found"),
        ("0" * 64, 404, "checkpoint_not_found"),
    ):
        answer = client.get(f"/v1/checkpoints/{typed}")
        assert (answer.status_code, answer.json()["code"]) == (status, code), (typed, answer.text)


def test_jobs_take_a_prefix(client: TestClient, program_ref: dict[str, Any], unpublished: None) -> None:
    job = client.post("/v1/jobs", json=job_body(program_ref, seed=11)).json()
    short = job["id"][:8]
    assert client.get(f"/v1/jobs/{short}").json()["id"] == job["id"]
    cancelled = client.delete(f"/v1/jobs/{short}")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert client.get(f"/v1/jobs/{job['id'][:7]}").status_code == 422
    missing = "0" * 8 if not job["id"].startswith("0" * 8) else "f" * 8
    assert client.get(f"/v1/jobs/{missing}").json()["code"] == "job_not_found"


@pytest.fixture
def sweep_id(clean_db: str) -> uuid.UUID:
    sweep = Sweep(
        selection={"models": []},
        dataset=DIGITS,
        sampling=SAMPLING.model_dump(mode="json"),
        protocol=PROTOCOL.to_dict(),
        rule="geometry",
    )
    with session_scope(clean_db) as session:
        session.add(sweep)
        session.flush()
        return sweep.id


def test_gates_and_sweeps_take_a_prefix(api: TestClient, database_url: str, sweep_id: uuid.UUID) -> None:
    run_id = stored_run(database_url, hashlib.sha256(b"gated").hexdigest(), MARKERS)
    body = {
        "candidate": {"source": "run", "id": str(run_id)},
        "baseline": {"source": "run", "id": str(run_id)},
        "dataset": DIGITS,
        "rules": ["dimension: max_drop 0.1"],
    }
    gate = api.post("/v1/gates", json=body).json()
    assert api.get(f"/v1/gates/{gate['id'][:8]}").json()["id"] == gate["id"]
    by_prefix = api.post("/v1/gates", json={**body, "baseline": {"source": "run", "id": str(run_id)[:8]}})
    assert by_prefix.status_code == 201, by_prefix.text
    assert by_prefix.json()["baseline_run_id"] == str(run_id)
    assert by_prefix.json()["baseline"] == {"source": "run", "id": str(run_id)}  # kept under its full id
    too_short = api.post("/v1/gates", json={**body, "baseline": {"source": "run", "id": "abc"}})
    assert (too_short.status_code, too_short.json()["code"]) == (422, "invalid_request")
    compared = api.get(f"/compare?runs={str(run_id)[:8]}")
    assert compared.status_code == 200 and str(run_id) in compared.text
    page = api.get(f"/gates/{gate['id'][:8]}", follow_redirects=False)
    assert (page.status_code, page.headers["location"]) == (303, f"/gates/{gate['id']}")
    assert api.get(f"/gates/{gate['id'][:5]}").status_code == 422
    assert api.get(f"/v1/sweeps/{str(sweep_id)[:8]}").json()["id"] == str(sweep_id)
    assert api.get(f"/v1/sweeps/{str(sweep_id)[:6]}").json()["code"] == "invalid_request"
