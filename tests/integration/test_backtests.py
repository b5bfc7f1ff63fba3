"""``POST /v1/backtests`` against stored runs in the real PostgreSQL database: study 3's confirmatory
method by default (recipes of seeds tagged ``recipe``), study 2's pre-registered method and the first
study's on request."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from tests.integration.seeding import fake_run
from zootriage.app.db.models import RunTag
from zootriage.app.db.session import session_scope
from zootriage.core.backtest import on_runs3
from zootriage.core.backtest.hypotheses import correlation, pairwise
from zootriage.core.backtest.on_runs import OUTCOME, RunOutcome, recipe_table


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


@pytest.fixture
def seeded(client: TestClient, clean_db: str) -> dict[str, tuple[str, str | None, float, dict[str, float]]]:
    """Two architectures × 3 recipes × 2 seeds (tag ``recipe``), dimension and outcome rising with the
    recipe, ID accuracy falling with it; plus one untagged run. Returns id -> (arch, recipe, outcome,
    markers)."""
    made = {}
    runs = []
    for a, arch in enumerate(("resnet18", "vgg11")):
        for recipe in range(3):
            for seed in range(2):
                i = 100 + 10 * a + 2 * recipe + seed
                markers = {
                    "dimension": recipe + 0.01 * seed,
                    "utilization": 0.1 * recipe + 0.001 * seed,
                    "id_accuracy": 0.9 - 0.01 * recipe,
                }
                run = fake_run(i, architecture=arch, markers=dict(markers))
                run.tags = [RunTag(key="recipe", value=f"r{recipe}")]
                runs.append((run, arch, f"r{recipe}", 0.5 + 0.1 * recipe + 0.001 * seed, markers))
    lone = fake_run(
        199, architecture="resnet18", markers={"dimension": 5.0, "utilization": 0.5, "id_accuracy": 0.5}
    )
    runs.append((lone, "resnet18", None, 0.9, {"dimension": 5.0, "utilization": 0.5, "id_accuracy": 0.5}))
    with session_scope(clean_db) as session:
        session.add_all([r[0] for r in runs])
        session.flush()
        for run, arch, recipe, outcome, markers in runs:
            made[str(run.id)] = (arch, recipe, outcome, markers)
    return made


def test_backtest_uses_study_3s_confirmatory_method_by_default(client: TestClient, seeded: dict) -> None:
    outcomes = {run_id: v[2] for run_id, v in seeded.items()}
    response = client.post("/v1/backtests", json={"outcomes": outcomes, "n_boot": 300})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["method"] == "confirmatory" and body["rules"] is None and body["markers"] is None
    assert body["n_models"] == 13 and body["recipes"] == 6 and body["eligible_pairs"] == 6
    assert body["recipes_by_architecture"] == {"resnet18": 3, "vgg11": 3} and body["min_archs"] == 6
    assert any("1 run(s) have no recipe label" in n for n in body["notes"])
    assert any("no random-init floor" in n for n in body["notes"])
    # The module's own answer on the same runs, and the counts by hand: every pair is beyond the seed
    # noise; dimension and the geometry rule pick every winner, ID accuracy (falling) none.
    runs = [RunOutcome(k, v[0], v[1], v[2], v[3]) for k, v in seeded.items()]
    direct = on_runs3.analyse(runs, ["dimension", "id_accuracy", "utilization"], n_boot=300)
    assert body["confirmatory_rules"] == direct["confirmatory_rules"]
    rules = body["confirmatory_rules"]
    assert set(rules) == {"dimension", "id_accuracy", "utilization", "geometry"}
    geometry = rules["geometry"]
    assert (geometry["correct"], geometry["wrong"], geometry["undecided"], geometry["pairs"]) == (6, 0, 0, 6)
    assert geometry["accuracy"] == 1.0 and geometry["ci95"] == [1.0, 1.0]
    assert rules["id_accuracy"]["wrong"] == 6 and rules["id_accuracy"]["vs_id_accuracy"] is None
    versus = geometry["vs_id_accuracy"]
    assert versus["d_by_architecture"] == {"resnet18": 1.0, "vgg11": 1.0} and versus["mean_d"] == 1.0
    assert versus["assessable"] is False and versus["p"] is None and versus["min_p"] == 0.25


def test_backtest_uses_the_preregistered_studys_method(client: TestClient, seeded: dict) -> None:
    outcomes = {run_id: v[2] for run_id, v in seeded.items()}
    response = client.post(
        "/v1/backtests",
        json={"outcomes": outcomes, "n_boot": 300, "n_perm": 999, "seed": 4, "method": "preregistered"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["method"] == "preregistered" and body["markers"] is None  # the first study's fields
    assert body["confirmatory_rules"] is None and body["eligible_pairs"] is None
    assert body["n_models"] == 13 and body["recipes"] == 6
    assert body["recipes_by_architecture"] == {"resnet18": 3, "vgg11": 3}
    assert any("1 run(s) have no recipe label" in note for note in body["notes"])
    # The study's own functions on the same recipes give the same numbers.
    runs = [RunOutcome(k, v[0], v[1], v[2], v[3]) for k, v in seeded.items()]
    names = ["dimension", "id_accuracy", "utilization"]
    raw, oriented = recipe_table(runs, names, False), recipe_table(runs, names, True)
    direct = correlation(raw, "dimension", OUTCOME, n_perm=999, n_boot=300, seed=4)
    got = body["rules"]["dimension"]["correlation"]
    assert got["rho_bar"] == pytest.approx(direct["rho_bar"]) == pytest.approx(1.0)
    assert got["p"] == pytest.approx(direct["p"]) and got["p_mc_error"] is not None
    geometry = pairwise(oriented, ("dimension", "utilization"), OUTCOME, n_boot=300, seed=4)
    rule = body["rules"]["geometry"]["pairwise"]
    assert rule["accuracy"] == geometry["accuracy"] == 1.0 and rule["eligible_pairs"] == 6
    assert rule["id_accuracy_accuracy"] == 0.0 and rule["delta"] == 1.0
    assert rule["delta_ci"] == pytest.approx(list(geometry["ci"]))


def test_the_recipe_tag_is_the_requests_choice(client: TestClient, seeded: dict) -> None:
    outcomes = {run_id: v[2] for run_id, v in seeded.items()}
    body = client.post(
        "/v1/backtests",
        json={"outcomes": outcomes, "n_boot": 100, "recipe_tag": "arm", "method": "preregistered"},
    ).json()
    assert body["recipes"] == 0 and any("13 run(s) have no recipe label" in n for n in body["notes"])
    assert body["rules"]["dimension"]["correlation"]["rho_bar"] is None
    confirmatory = client.post(
        "/v1/backtests", json={"outcomes": outcomes, "n_boot": 100, "recipe_tag": "arm"}
    ).json()
    assert confirmatory["recipes"] == 0 and confirmatory["eligible_pairs"] == 0
    assert confirmatory["confirmatory_rules"]["dimension"]["accuracy"] is None
    bad = client.post("/v1/backtests", json={"outcomes": outcomes, "method": "third"})
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_request"


def test_backtest_correlates_markers_with_outcomes(client: TestClient, zoo: dict[str, str]) -> None:
    """``method="first-study"``: the first study's statistics, as the answer was before ``method``."""
    response = client.post(
        "/v1/backtests", json={"outcomes": _outcomes(zoo), "n_boot": 200, "method": "first-study"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["method"] == "first-study" and body["rules"] is None and body["confirmatory_rules"] is None
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
    assert list(response.json()["confirmatory_rules"]) == ["utilization"]
    preregistered = client.post("/v1/backtests", json={**body, "method": "preregistered"})
    assert list(preregistered.json()["rules"]) == ["utilization"]
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
