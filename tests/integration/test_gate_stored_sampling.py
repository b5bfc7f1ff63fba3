"""A gate against a stored run (``run:ID``) takes that run's sampling and protocol as they are stored,
``up_to`` included (which no request can state): the request may restate fields, not change them."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi.testclient import TestClient

from tests.integration.stored_runs import DIGITS, SAMPLING, count_jobs, stored_run
from zootriage.app.db.models import Run
from zootriage.app.db.session import session_scope

# What a job that left per_class out stores (``Sampling.for_repeats``): a cap, ``up_to``.
DEFAULT_SAMPLING = SAMPLING.model_copy(update={"per_class": 25, "up_to": True})


def _stored_with_default_sampling(database_url: str, label: str) -> uuid.UUID:
    run_id = stored_run(database_url, label, {"dimension": 2.0, "id_accuracy": 0.9})
    with session_scope(database_url) as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.sampling = DEFAULT_SAMPLING.model_dump(mode="json")
    return run_id


def _body(candidate: uuid.UUID, baseline: uuid.UUID, **scoring: Any) -> dict[str, Any]:
    return {
        "candidate": {"source": "run", "id": str(candidate)},
        "baseline": {"source": "run", "id": str(baseline)},
        "dataset": DIGITS,
        "rules": ["id_accuracy: max_drop 0.01"],
        **scoring,
    }


def test_a_run_gated_against_itself_takes_its_stored_sampling(api: TestClient, database_url: str) -> None:
    run = _stored_with_default_sampling(database_url, "released")
    for scoring in (
        {},  # nothing stated: the run's own
        {"sampling": {"classes": 2, "seed": 0}, "protocol": {"n_t": 20, "points_per_class": 5}},  # restated
        {"sampling": {"classes": 2, "per_class": 25}},  # per_class restated, up_to left to the run
    ):
        answer = api.post("/v1/gates", json=_body(run, run, **scoring))
        assert answer.status_code == 201, answer.text
        assert answer.json()["status"] == "passed"
    assert count_jobs(database_url) == 0


def test_a_field_stated_otherwise_is_refused_and_named(api: TestClient, database_url: str) -> None:
    run = _stored_with_default_sampling(database_url, "released")
    for scoring, named in (
        ({"sampling": {"per_class": 50}}, "sampling.per_class 50 (the run has 25)"),
        ({"protocol": {"n_t": 1000}}, "protocol.n_t 1000 (the run has 20)"),
        ({"sampling": {"seed": 3}}, "sampling.seed 3"),
    ):
        answer = api.post("/v1/gates", json=_body(run, run, **scoring))
        assert (answer.status_code, answer.json()["code"]) == (422, "incomparable_runs"), answer.text
        assert named in answer.json()["message"] and str(run) in answer.json()["message"]
    other = stored_run(
        database_url, "explicit", {"dimension": 2.0, "id_accuracy": 0.9}
    )  # per_class 5, no cap
    mixed = api.post("/v1/gates", json=_body(other, run))
    assert (mixed.status_code, mixed.json()["code"]) == (422, "incomparable_runs")
    assert count_jobs(database_url) == 0
