"""Rankings and recommendations end to end: uvicorn, a Celery worker, Redis, PostgreSQL.

The advertorch LeNet5 pair (trained normally and adversarially) is ranked on MNIST; mobilenet_v2 (the
smallest torchvision architecture with v1/v2 weights) gets a verdict from seeded random weights placed
in the stack's TORCH_HOME. Samples and n_t are tiny so that each job takes seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from tests.integration.jobs import upload, wait_for_jobs
from tests.integration.models import place_torchvision_weights
from tests.integration.stack import TriageStack
from zootriage.app.db.models import Job
from zootriage.app.db.session import session_scope
from zootriage.core.evidence import evidence_for, rule_key
from zootriage.core.protocol import DEFAULT_REPEATS
from zootriage.core.triage import MarkerRecord, rank, verdict
from zootriage.core.zoo import v1_v2_pairs

pytestmark = pytest.mark.slow  # real jobs through the stack

MNIST = {"source": "builtin", "name": "mnist"}
# The geometry rule is named: these tests check its verdicts against core.triage (the product default
# is whatever the pre-registered study chose, core/defaults.py).
QUERY = "dataset=builtin:mnist&split=test&classes=2&per_class=6&n_t=20&points_per_class=6&rule=geometry"


def _record(label: str, markers: dict[str, dict[str, Any]]) -> MarkerRecord:
    """As the service reads a run stored under the default protocol."""
    return MarkerRecord(
        label,
        {k: v["value"] for k, v in markers.items()},
        {k: v["std"] for k, v in markers.items()},
        repeats=DEFAULT_REPEATS,
        undecidable={k: v["reason"] for k, v in markers.items() if not v["decidable"]},
    )


def _jobs(database_url: str) -> int:
    with session_scope(database_url) as session:
        return int(session.scalar(select(func.count()).select_from(Job)) or 0)


def test_lenet5_pair_ranked_on_mnist(
    triage_stack: TriageStack,
    digit_programs: dict[str, Path],
    clean_db: str,
) -> None:
    http = triage_stack.http
    paths = {kind: upload(http, digit_programs[kind]) for kind in ("clntrained", "advtrained")}
    body: dict[str, Any] = {
        "candidates": [{"source": "checkpoint", "path": path} for path in paths.values()],
        "dataset": MNIST,
        "sampling": {"split": "test"},  # the default: 20 × 5 repeats images per class, disjoint
        "protocol": {"n_t": 100, "points_per_class": 20},
        "rule": "geometry",
    }
    pending = http.post("/v1/rankings", json=body)
    assert pending.status_code == 202, pending.text
    assert pending.json()["status"] == "pending" and len(pending.json()["jobs"]) == 2
    assert {job["status"] for job in wait_for_jobs(http, pending.json()["jobs"])} == {"succeeded"}

    answer = http.post("/v1/rankings", json=body)
    assert answer.status_code == 200, answer.text
    ranking = answer.json()
    labels = {digit_programs[kind].name for kind in paths}  # an upload is labelled by its file name
    assert {e["label"] for e in ranking["entries"]} == labels
    assert all(e["rank"] is not None and e["id_accuracy_rank"] is not None for e in ranking["entries"])
    assert all(e["missing"] == [] for e in ranking["entries"])  # label spaces match: id_accuracy exists
    accuracies = [e["markers"]["id_accuracy"]["value"] for e in ranking["entries"]]
    assert all(0.9 < acc <= 1.0 for acc in accuracies)  # the published checkpoints, really loaded
    expected = rank([_record(e["label"], e["markers"]) for e in ranking["entries"]])
    assert [e["label"] for e in ranking["entries"]] == [e.name for e in expected.entries]
    assert ranking["pick"] == expected.pick and ranking["id_accuracy_pick"] == expected.id_accuracy_pick
    assert ranking["reason"] == expected.reason
    assert ranking["rule"]["name"] == "geometry" and ranking["rule"]["glue_variant"] == "one_vs_rest,none"
    assert "does NOT show this rule beating ID accuracy" in ranking["rule"]["evidence"]
    assert all(e["markers"]["dimension"]["std"] is not None for e in ranking["entries"])
    assert ranking["picks_agree"] == expected.picks_agree
    flagged = [e["label"] for e in ranking["entries"] if e["disagrees_with_id_accuracy"]]
    assert sorted(flagged) == sorted({n for pair in ranking["id_accuracy_discordant"] for n in pair})

    jobs_before = _jobs(clean_db)
    again = http.post("/v1/rankings", json=body)
    assert again.status_code == 200 and again.json() == ranking  # stored runs, nothing queued
    assert _jobs(clean_db) == jobs_before


def test_recommendation_for_a_v1_v2_architecture(triage_stack: TriageStack, clean_db: str) -> None:
    http = triage_stack.http
    for seed, weights in enumerate(("IMAGENET1K_V1", "IMAGENET1K_V2")):
        place_torchvision_weights(triage_stack.torch_home, "mobilenet_v2", weights, seed)
    unscored = http.get(f"/v1/recommendations/mobilenet_v2?{QUERY}")  # a GET queues nothing
    assert (unscored.status_code, unscored.json()["code"]) == (404, "not_scored"), unscored.text
    pending = http.post(f"/v1/recommendations/mobilenet_v2?{QUERY}")
    assert pending.status_code == 202, pending.text
    assert {job["status"] for job in wait_for_jobs(http, pending.json()["jobs"])} == {"succeeded"}

    answer = http.get(f"/v1/recommendations/mobilenet_v2?{QUERY}")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    pair = {p.arch: p for p in v1_v2_pairs()}["mobilenet_v2"]
    assert (body["v1"]["imagenet_acc1"], body["v2"]["imagenet_acc1"]) == (pair.v1_acc1, pair.v2_acc1)
    assert body["id_accuracy_pick"] == "undecided"  # 72.154 vs 71.878: within 50,000 images' noise
    assert body["v1"]["run_id"] != body["v2"]["run_id"]
    expected = verdict(_record("v1", body["v1"]["markers"]), _record("v2", body["v2"]["markers"]))
    assert (body["verdict"], body["reason"]) == (expected.decision, expected.reason)
    shipped = evidence_for(rule_key("geometry", "one_vs_rest", "none"))
    assert shipped is not None and body["rule"]["evidence_detail"]["pairs"] == shipped.pairs
    assert body["picks_agree"] is None
    assert body["v1"]["markers"]["id_accuracy"]["value"] is None  # MNIST is not ImageNet's label space

    listed = http.get(f"/v1/recommendations?{QUERY}&limit=100").json()["items"]
    verdicts = {item["architecture"]: item["verdict"] for item in listed}
    assert verdicts.pop("mobilenet_v2") == body["verdict"]
    assert set(verdicts.values()) == {None}
