"""Advice per question through the API and the pages (issue 24): ImageNet weights scored on another
label space (no measured ID accuracy) get an answer with its confidence and the rule followed, every
candidate rule beside its win rate from ``core/evidence.json``."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.integration.stored_runs import QUERY, count_jobs, stored_run
from zootriage.app.db.models import Run
from zootriage.app.db.run_queries import markers_of
from zootriage.app.db.session import session_scope
from zootriage.app.services.rankings import ranked
from zootriage.app.services.triage import Gathered, Wanted, published_acc1
from zootriage.core.defaults import product_default
from zootriage.core.evidence import load_evidence, rule_key
from zootriage.core.protocol import Protocol
from zootriage.core.triage import make_rule
from zootriage.core.triage.advice import CANDIDATE_RULES
from zootriage.core.zoo.refs import TorchvisionRef

VARIANT = ("one_vs_rest", "none")  # the default protocol's GLUE variant


def evidence_entry(rule: str) -> dict[str, Any]:
    """The shipped evidence of ``rule`` as the service reads it (any version of the file)."""
    doc = load_evidence()
    return dict(doc["outcomes"][doc["primary_outcome"]]["rules"][rule_key(rule, *VARIANT)])


def store_pair(database_url: str, arch: str) -> None:
    """Both weights scored on digits: geometry markers only, no ``id_accuracy`` (other label space);
    the worker stores the published acc@1 in ``model_meta``, which the stored runs here lack, so the
    pair's metadata is what supplies it."""
    for weights, d, u in (("IMAGENET1K_V1", 1.0, 0.2), ("IMAGENET1K_V2", 1.5, 0.3)):
        model = {"source": "torchvision", "arch": arch, "weights": weights}
        stored_run(database_url, f"{arch}-{weights}", {"dimension": d, "utilization": u}, model=model)


def check_rules(advice: dict[str, Any]) -> None:
    assert [a["rule"] for a in advice["rules"]][1:] == [
        r for r in CANDIDATE_RULES if r != advice["rules"][0]["rule"]
    ]
    for answer in advice["rules"]:
        entry = evidence_entry(answer["rule"])
        assert answer["win_rate"] == entry["win_rate"] and answer["pairs"] == entry["pairs"]
        assert answer["win_rate_ci"] == entry["win_rate_ci"]


def test_default_verdict_on_imagenet_weights_elsewhere_is_answered(
    api: TestClient, database_url: str
) -> None:
    store_pair(database_url, "resnet50")
    items = api.get(f"/v1/recommendations?{QUERY}&limit=100").json()["items"]
    item = next(i for i in items if i["architecture"] == "resnet50")
    chosen = product_default()
    advice = item["advice"]
    assert advice["pick"] == "v2" and advice["answer"] == "v2"
    check_rules(advice)
    followed = next(a for a in advice["rules"] if a["rule"] == advice["followed_rule"])
    assert advice["confidence"] == followed["win_rate"] and advice["confidence_pairs"] == followed["pairs"]
    assert advice["exploratory"] == (not followed["validated"])
    if chosen.v1_v2_rule == "id_accuracy":
        # 76.13 vs 80.858 published acc@1: far beyond the binomial noise of 50,000 images.
        assert item["verdict"] == "v2"
        assert advice["followed_rule"] == "id_accuracy" and "product's default" in advice["why"]
        assert followed["source"] and "published" in followed["source"]
    # Nothing without advice for a pair that is not scored.
    assert next(i for i in items if i["architecture"] == "mobilenet_v2")["advice"] is None
    page = api.get(f"/recommendations/resnet50?{QUERY}").text
    assert 'id="advice-table"' in page and f'data-followed="{advice["followed_rule"]}"' in page
    assert f"{advice['confidence']:.0%}" in page
    assert count_jobs(database_url) == 0


def test_within_the_noise_of_published_accuracy_the_best_evidenced_rule_answers(
    api: TestClient, database_url: str
) -> None:
    # mobilenet_v2: 71.878 vs 72.154 acc@1 is within the noise of 50,000 images.
    store_pair(database_url, "mobilenet_v2")
    items = api.get(f"/v1/recommendations?{QUERY}&limit=100&rule=id_accuracy").json()["items"]
    item = next(i for i in items if i["architecture"] == "mobilenet_v2")
    assert item["verdict"] == "undecided"
    advice = item["advice"]
    assert advice["pick"] == "v2" and advice["followed_rule"] != "id_accuracy"
    assert advice["why"].startswith("id_accuracy cannot decide") and "best-evidenced" in advice["why"]
    by_rule = {a["rule"]: a for a in advice["rules"]}
    assert by_rule["id_accuracy"]["answer"] == "no difference beyond the noise"
    assert by_rule["numerical_rank"]["pick"] is None  # no run carries it
    followed = by_rule[advice["followed_rule"]]
    assert advice["confidence"] == evidence_entry(advice["followed_rule"])["win_rate"]
    deciding = [a for a in advice["rules"] if a["pick"] is not None]
    best = max(deciding, key=lambda a: (a["validated"], a["win_rate_ci"][0], a["win_rate"]))
    assert followed["rule"] == best["rule"]


def test_ranking_uses_the_published_accuracy_the_worker_stored(database_url: str) -> None:
    """``ranked`` (what POST /v1/rankings and sweeps answer with once every run is stored) reads the
    acc@1 the worker keeps in ``model_meta``; a run's label space other than ImageNet-1k's gives none."""
    ids = {}
    for weights, acc1, d in (("IMAGENET1K_V1", 76.13, 1.0), ("IMAGENET1K_V2", 80.858, 1.0)):
        model = {"source": "torchvision", "arch": "resnet50", "weights": weights}
        ids[weights] = stored_run(database_url, weights, {"dimension": d, "utilization": 0.2}, model=model)
        with session_scope(database_url) as session:
            run = session.get(Run, ids[weights])
            assert run is not None
            run.model_meta = {"acc1": acc1, "label_space": "imagenet-1k"}
    with session_scope(database_url) as session:
        runs = {w: session.get(Run, run_id) for w, run_id in ids.items()}
        assert published_acc1(runs["IMAGENET1K_V2"]) == 80.858  # type: ignore[arg-type]
        found = {w: r for w, r in runs.items() if r is not None}
        gathered = Gathered(found, [], markers_of(session, list(ids.values())))
        models = {
            w: Wanted(TorchvisionRef(arch="resnet50", weights=w), name=w)
            for w in ("IMAGENET1K_V1", "IMAGENET1K_V2")
        }
        answer = ranked(
            session, make_rule("id_accuracy"), Protocol(n_t=20, points_per_class=5), models, gathered
        )
    assert answer.pick == "IMAGENET1K_V2"
    advice = answer.advice.model_dump(mode="json")
    assert advice["question"] == "ranking" and advice["pick"] == "IMAGENET1K_V2"
    assert advice["followed_rule"] == "id_accuracy" and advice["why"] == "the rule the request named"
    check_rules(advice)
    assert advice["confidence"] == evidence_entry("id_accuracy")["win_rate"]
    assert advice["rules"][0]["source"] and "published" in advice["rules"][0]["source"]
