"""``POST /v1/backtests`` against stored runs in the real PostgreSQL database."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from tests.integration.seeding import fake_run
from zootriage.app.db.session import session_scope


@pytest.fixture
def zoo(client: TestClient, clean_db: str) -> dict[str, str]:
    """Five resnet18 runs whose dimension rises with i and one vgg11 run; returns id -> outcome label."""
    runs = [
        fake_run(
            i, architecture="resnet18", markers={"dimension": float(i), "utilization": 0.1 * i, "nc1": None}
        )
        for i in range(5)
    ]
    runs.append(fake_run(9, architecture="vgg11", markers={"dimension": 2.0, "utilization": 0.5, "nc1": 1.0}))
    with session_scope(clean_db) as session:
        session.add_all(runs)
        session.flush()
        return {str(run.id): run.architecture or "" for run in runs}


def _outcomes(zoo: dict[str, str]) -> dict[str, float]:
    # resnet18 outcomes rise with the run's dimension (its index); the vgg11 run is on its own.
    ordered = sorted(zoo, key=lambda run_id: zoo[run_id] == "vgg11")
    return {run_id: 0.5 + 0.05 * i for i, run_id in enumerate(ordered)}


def test_backtest_correlates_markers_with_outcomes(client: TestClient, zoo: dict[str, str]) -> None:
    response = client.post("/v1/backtests", json={"outcomes": _outcomes(zoo), "n_boot": 200})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["n_models"] == 6 and body["architectures"] == {"resnet18": 5, "vgg11": 1}
    dim = body["markers"]["dimension"]
    assert dim["by_architecture"]["resnet18"]["pearson"] == pytest.approx(1.0)
    assert dim["pairwise"] == {"pairs": 10, "wins": 1.0, "losses": 0.0, "undecided": 0.0}
    assert body["geometry_rule"]["wins"] == 1.0
    assert body["markers"]["nc1"]["pooled"]["n"] == 1 and body["markers"]["nc1"]["pooled"]["pearson"] is None


def test_backtest_can_restrict_markers(client: TestClient, zoo: dict[str, str]) -> None:
    body = {"outcomes": _outcomes(zoo), "markers": ["utilization"], "n_boot": 100}
    response = client.post("/v1/backtests", json=body)
    assert response.status_code == 200, response.text
    assert list(response.json()["markers"]) == ["utilization"]
    body["markers"] = ["no_such_marker"]
    bad = client.post("/v1/backtests", json=body)
    assert bad.status_code == 422 and bad.json()["code"] == "unknown_marker"


def test_unknown_runs_are_named(client: TestClient, zoo: dict[str, str]) -> None:
    ghost = str(uuid.uuid4())
    outcomes = {**_outcomes(zoo), ghost: 0.3}
    response = client.post("/v1/backtests", json={"outcomes": outcomes})
    assert response.status_code == 404
    assert response.json() == {
        "code": "run_not_found",
        "message": f"no run(s) {ghost}",
        "request_id": response.headers["x-request-id"],
    }


def test_too_few_runs_and_bad_outcomes_are_422(client: TestClient, zoo: dict[str, str]) -> None:
    two = dict(list(_outcomes(zoo).items())[:2])
    response = client.post("/v1/backtests", json={"outcomes": two})
    assert response.status_code == 422 and response.json()["code"] == "invalid_request"
    assert "outcomes" in response.json()["message"]
    outcomes = _outcomes(zoo)
    first = next(iter(outcomes))
    outcomes[first] = "high"  # type: ignore[assignment]
    bad = client.post("/v1/backtests", json={"outcomes": outcomes})
    assert bad.status_code == 422 and set(bad.json()) == {"code", "message", "request_id"}


def test_runs_of_different_protocols_are_not_compared(client: TestClient, clean_db: str) -> None:
    runs = [fake_run(i, markers={"dimension": float(i)}) for i in range(3)]
    runs[0].protocol = {"n_t": 2000}
    with session_scope(clean_db) as session:
        session.add_all(runs)
        session.flush()
        ids = [str(run.id) for run in runs]
    response = client.post("/v1/backtests", json={"outcomes": {i: 0.5 for i in ids}})
    assert response.status_code == 422 and response.json()["code"] == "mixed_protocols"


def test_runs_scored_on_different_datasets_are_not_compared(client: TestClient, clean_db: str) -> None:
    runs = [fake_run(i, markers={"dimension": float(i)}) for i in range(3)]
    runs[2].dataset_fingerprint = "f" * 64
    with session_scope(clean_db) as session:
        session.add_all(runs)
        session.flush()
        ids = [str(run.id) for run in runs]
    response = client.post("/v1/backtests", json={"outcomes": {i: 0.5 for i in ids}})
    assert response.status_code == 422 and response.json()["code"] == "mixed_datasets"
