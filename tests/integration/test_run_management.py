"""Run management against the real PostgreSQL: a run's description edited after scoring, archiving and
restoring (nothing lost: hidden from the default history and the stored-run recommendations, still found
by id, by ``?archived=include|only``, and used by a gate or a recommendation that names it, which says
so), and the case-insensitive name search with LIKE's wildcards taken literally."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.integration.access import PUBLIC, app_client, stored_key
from tests.integration.stored_runs import DIGITS, QUERY, SAMPLING, stored_run
from zootriage.app.api_keys import Scope
from zootriage.app.db.models import Run
from zootriage.app.db.session import session_scope
from zootriage.app.labels import DESCRIPTION_CHARS
from zootriage.app.settings import Settings

MARKERS: dict[str, float | None] = {"dimension": 2.0, "utilization": 0.4, "id_accuracy": 0.9}


def named_run(database_url: str, name: str | None) -> uuid.UUID:
    return stored_run(database_url, f"manage-{uuid.uuid4()}", MARKERS, name=name)


def listed(client: TestClient, query: str = "") -> list[str]:
    answer = client.get(f"/v1/runs?{query}")
    assert answer.status_code == 200, answer.text
    return [item["id"] for item in answer.json()["items"]]


def test_a_description_is_set_kept_replaced_and_removed(client: TestClient, clean_db: str) -> None:
    run_id = named_run(clean_db, "described")
    text = "Trained on the cleaned split.\nSee ticket ML-42.\tTabs too."
    set_ = client.patch(f"/v1/runs/{run_id}", json={"description": text})
    assert set_.status_code == 200, set_.text
    assert (set_.json()["description"], set_.json()["name"]) == (text, "described")
    assert client.get(f"/v1/runs/{run_id}").json()["description"] == text
    assert client.get("/v1/runs").json()["items"][0]["description"] == text  # in the history's JSON too

    renamed = client.patch(f"/v1/runs/{run_id}", json={"name": "other", "tags": {"a": "b"}})
    assert renamed.json()["description"] == text  # left out: kept
    cleared = client.patch(f"/v1/runs/{run_id}", json={"description": None})
    assert cleared.json()["description"] is None and cleared.json()["name"] == "other"
    with session_scope(clean_db) as session:
        run = session.get(Run, run_id)
        assert run is not None and run.description is None


@pytest.mark.parametrize(
    ("description", "says"),
    [
        ("x" * (DESCRIPTION_CHARS + 1), "description"),
        ("", "description"),
        ("   \n ", "blank"),
        ("bell \x07", "printable"),
        (42, "description"),
    ],
)
def test_a_bad_description_is_422_and_changes_nothing(
    client: TestClient, clean_db: str, description: Any, says: str
) -> None:
    run_id = named_run(clean_db, "kept")
    client.patch(f"/v1/runs/{run_id}", json={"description": "before"})
    refused = client.patch(f"/v1/runs/{run_id}", json={"description": description, "name": "changed"})
    assert (refused.status_code, refused.json()["code"]) == (422, "invalid_request"), refused.text
    assert says in refused.json()["message"]
    detail = client.get(f"/v1/runs/{run_id}").json()
    assert (detail["description"], detail["name"]) == ("before", "kept")


def test_the_longest_description_is_accepted(client: TestClient, clean_db: str) -> None:
    run_id = named_run(clean_db, None)
    longest = "y" * DESCRIPTION_CHARS
    assert client.patch(f"/v1/runs/{run_id}", json={"description": longest}).json()["description"] == longest


def test_archiving_hides_a_run_from_the_history_and_restoring_brings_it_back(
    client: TestClient, clean_db: str
) -> None:
    kept, archived = named_run(clean_db, "kept"), named_run(clean_db, "archived")
    answer = client.post(f"/v1/runs/{archived}/archive")
    assert answer.status_code == 200, answer.text
    stamp = answer.json()["archived_at"]
    assert stamp is not None and answer.json()["markers"]  # the run in full, nothing lost
    assert listed(client) == [str(kept)]
    assert listed(client, "archived=exclude") == [str(kept)]
    assert sorted(listed(client, "archived=include")) == sorted([str(kept), str(archived)])
    assert listed(client, "archived=only") == [str(archived)]
    assert listed(client, "archived=only&name=archived") == [str(archived)]
    detail = client.get(f"/v1/runs/{archived}")
    assert detail.status_code == 200 and detail.json()["archived_at"] == stamp
    assert client.get(f"/v1/runs/{kept}").json()["archived_at"] is None
    csv = client.get("/v1/runs?format=csv").text
    assert str(kept) in csv and str(archived) not in csv
    assert str(archived) in client.get("/v1/runs?format=csv&archived=only").text

    again = client.post(f"/v1/runs/{archived}/archive")
    assert again.status_code == 200 and again.json()["archived_at"] == stamp  # the first archiving stays
    restored = client.post(f"/v1/runs/{archived}/restore")
    assert restored.status_code == 200 and restored.json()["archived_at"] is None
    assert sorted(listed(client)) == sorted([str(kept), str(archived)])
    assert client.post(f"/v1/runs/{archived}/restore").json()["archived_at"] is None  # idempotent
    with session_scope(clean_db) as session:
        assert session.query(Run).count() == 2


def test_archive_answers_404_422_and_a_bad_filter(client: TestClient, clean_db: str) -> None:
    missing = client.post(f"/v1/runs/{uuid.uuid4()}/archive")
    assert (missing.status_code, missing.json()["code"]) == (404, "run_not_found")
    bad = client.post("/v1/runs/not-an-id/restore")
    assert (bad.status_code, bad.json()["code"]) == (422, "invalid_request")
    wrong = client.get("/v1/runs?archived=sometimes")
    assert (wrong.status_code, wrong.json()["code"]) == (422, "invalid_request")


def test_archive_and_restore_need_the_write_scope(settings: Settings, clean_db: str) -> None:
    run_id = named_run(clean_db, "guarded")
    reader = {"X-API-Key": stored_key(clean_db, Scope.read, name="r")}
    writer = {"X-API-Key": stored_key(clean_db, Scope.write, name="w")}
    with app_client(settings, **PUBLIC) as client:
        anonymous = client.post(f"/v1/runs/{run_id}/archive")
        assert (anonymous.status_code, anonymous.json()["code"]) == (401, "unauthorized")
        read_only = client.post(f"/v1/runs/{run_id}/archive", headers=reader)
        assert (read_only.status_code, read_only.json()["code"]) == (403, "forbidden")
        assert client.get(f"/v1/runs/{run_id}", headers=reader).json()["archived_at"] is None
        assert client.post(f"/v1/runs/{run_id}/archive", headers=writer).status_code == 200
        refused = client.post(f"/v1/runs/{run_id}/restore", headers=reader)
        assert (refused.status_code, refused.json()["code"]) == (403, "forbidden")
        assert client.get(f"/v1/runs/{run_id}", headers=reader).json()["archived_at"] is not None


def test_name_search_is_a_case_insensitive_substring_with_literal_wildcards(
    client: TestClient, clean_db: str
) -> None:
    names = ["ResNet-50 v2", "resnet18", "mobile_net 100%", "mobileXnet 1005", None]
    ids = {name: str(named_run(clean_db, name)) for name in names}
    assert sorted(listed(client, "name_contains=RESNET")) == sorted([ids["ResNet-50 v2"], ids["resnet18"]])
    assert listed(client, "name_contains=50%20V2") == [ids["ResNet-50 v2"]]
    assert listed(client, "name_contains=e_n") == [ids["mobile_net 100%"]]  # _ is not "any character"
    assert listed(client, "name_contains=100%25") == [ids["mobile_net 100%"]]  # % is not "anything"
    assert listed(client, "name_contains=%25") == [ids["mobile_net 100%"]]
    assert listed(client, "name_contains=nothing-like-it") == []
    assert len(listed(client, "name_contains=%20%20")) == 5  # blank: no filter, as every blank field
    client.post(f"/v1/runs/{ids['resnet18']}/archive")
    assert listed(client, "name_contains=resnet") == [ids["ResNet-50 v2"]]
    assert sorted(listed(client, "name_contains=resnet&archived=include")) == sorted(
        [ids["ResNet-50 v2"], ids["resnet18"]]
    )
    too_long = client.get("/v1/runs?name_contains=" + "x" * 129)
    assert (too_long.status_code, too_long.json()["code"]) == (422, "invalid_request")


def _v1_v2(database_url: str, arch: str) -> dict[str, uuid.UUID]:
    runs = {}
    for weights, d, u in (("IMAGENET1K_V1", 1.0, 0.2), ("IMAGENET1K_V2", 1.5, 0.3)):
        model = {"source": "torchvision", "arch": arch, "weights": weights}
        markers = {"dimension": d, "utilization": u}
        runs[weights] = stored_run(database_url, f"{arch}-{weights}", markers, model=model)
    return runs


def test_an_archived_run_drops_out_of_the_stored_recommendations(api: TestClient, database_url: str) -> None:
    runs = _v1_v2(database_url, "mobilenet_v2")

    def verdict() -> str | None:
        items = api.get(f"/v1/recommendations?{QUERY}&limit=100&rule=geometry").json()["items"]
        return {item["architecture"]: item for item in items}["mobilenet_v2"]["verdict"]

    assert verdict() == "v2"
    api.post(f"/v1/runs/{runs['IMAGENET1K_V1']}/archive")
    assert verdict() is None  # as if v1 were not stored
    page = api.get(f"/recommendations/mobilenet_v2?{QUERY}&rule=geometry")
    assert page.status_code == 200 and "not scored yet" in page.text.lower()
    assert api.get(f"/v1/runs/{runs['IMAGENET1K_V1']}").json()["archived_at"] is not None  # still there
    api.post(f"/v1/runs/{runs['IMAGENET1K_V1']}/restore")
    assert verdict() == "v2"


def _gate(candidate: uuid.UUID, baseline: uuid.UUID) -> dict[str, Any]:
    return {
        "candidate": {"source": "run", "id": str(candidate)},
        "baseline": {"source": "run", "id": str(baseline)},
        "dataset": DIGITS,
        "sampling": SAMPLING.model_dump(mode="json"),
        "protocol": {"n_t": 20, "points_per_class": 5},
        "rules": ["dimension: max_relative_drop 0.05"],
    }


def test_a_gate_against_an_archived_baseline_still_decides_and_says_so(
    api: TestClient, database_url: str
) -> None:
    baseline = stored_run(database_url, "released", {"dimension": 2.0, "id_accuracy": 0.9})
    candidate = stored_run(database_url, "candidate", {"dimension": 1.99, "id_accuracy": 0.9})
    before = api.post("/v1/gates", json=_gate(candidate, baseline))
    assert before.status_code == 201 and before.json()["warnings"] == []
    assert api.post(f"/v1/runs/{baseline}/archive").status_code == 200
    after = api.post("/v1/gates", json=_gate(candidate, baseline))
    assert after.status_code == 201, after.text
    assert after.json()["status"] == before.json()["status"] == "passed"
    assert after.json()["rules"][0]["baseline"] == 2.0
    [warning] = after.json()["warnings"]
    assert warning.startswith(f"the baseline run {baseline} is archived")
    # The stored decisions say it too while the run stays archived, and stop once it is restored.
    assert api.get(f"/v1/gates/{before.json()['id']}").json()["warnings"] == [warning]
    assert [g["warnings"] for g in api.get("/v1/gates").json()["items"]] == [[warning], [warning]]
    api.post(f"/v1/runs/{baseline}/restore")
    assert api.get(f"/v1/gates/{after.json()['id']}").json()["warnings"] == []
