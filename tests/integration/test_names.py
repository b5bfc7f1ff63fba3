"""Names, tags and labels through the API against the real PostgreSQL: uploads keep the client's file
name and take a name, tags and preprocessing; jobs take or inherit them; the history filters on them;
rankings and gates call every candidate by its label, never by a bare hash."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from tests.conftest import MNIST_NORMALISED
from zootriage.app.db.models import Job, Marker, Run, RunTag
from zootriage.app.db.run_key import request_key
from zootriage.app.db.session import session_scope
from zootriage.app.schemas.jobs import JobRequest
from zootriage.app.services.admission import normalised_request
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import BuiltinRef, Sampling
from zootriage.core.data.sampling import sample
from zootriage.core.markers import Protocol
from zootriage.core.zoo.exporting import export_program
from zootriage.core.zoo.preprocess import PRESETS
from zootriage.core.zoo.program_metadata import ProgramMetadata

SAMPLING = Sampling(classes=2, per_class=5)
PROTOCOL = Protocol(n_t=20, points_per_class=5)
DIGITS = {"source": "builtin", "name": "digits"}
HASH = re.compile(r"[0-9a-f]{64}")


@pytest.fixture(scope="module")
def small_programs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two programs under the test upload limit with different bytes (each its own random init), and
    no zootriage.json of their own."""
    from ccexam.models import MNISTNet

    folder = tmp_path_factory.mktemp("small")
    shape = (1, 28, 28)
    return [export_program(MNISTNet(28), shape, ProgramMetadata(), folder / f"{i}.pt2") for i in range(2)]


@pytest.fixture
def api(client: TestClient) -> TestClient:
    """The in-process API on empty tables (``client`` wipes every table, gates included)."""
    return client


def upload(api: TestClient, path: Path, filename: str, **fields: str) -> dict[str, Any]:
    answer = api.post("/v1/checkpoints", files={"file": (filename, path.read_bytes())}, data=fields)
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def test_an_upload_keeps_its_file_name_name_tags_and_preprocessing(
    api: TestClient, digit_programs: dict[str, Path]
) -> None:
    fields = {
        "name": "ccexam cnn v1",
        "tags": "team=vision, stage=candidate",
        "preprocess": json.dumps(MNIST_NORMALISED),
        "label_space": "digits",
        "architecture": "MNISTNet",
    }
    stored = upload(api, digit_programs["ccexam"], "nets/ccexam.pt2", **fields)
    assert stored["filename"] == "ccexam.pt2"  # the client's name, without any folder
    assert (stored["name"], stored["tags"]) == ("ccexam cnn v1", {"team": "vision", "stage": "candidate"})
    assert stored["preprocess"]["mean"] == [0.1307] and stored["preprocess"]["resize"] is None
    assert (stored["label_space"], stored["architecture"]) == ("digits", "MNISTNet")
    data = digit_programs["ccexam"].read_bytes()
    again = api.post("/v1/checkpoints", files={"file": ("ccexam.pt2", data)}, data=fields)
    assert again.status_code == 200 and again.json() == stored
    # Names, tags and file names label jobs and runs, not bytes: the stored record answers, unchanged.
    renamed = api.post(
        "/v1/checkpoints", files={"file": ("other.pt2", data)}, data={"name": "x", "tags": "team=audio"}
    )
    assert renamed.status_code == 200 and renamed.json() == stored
    # What jobs inherit may not change under them.
    other = {**fields, "preprocess": json.dumps({**MNIST_NORMALISED, "std": [1.0]})}
    refused = api.post("/v1/checkpoints", files={"file": ("ccexam.pt2", data)}, data=other)
    assert (refused.status_code, refused.json()["code"]) == (409, "checkpoint_exists")
    assert "model.preprocess" in refused.json()["message"]


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("name", "bell\x07", "control character"),
        ("name", "no-break\u00a0space", "printable"),
        ("name", "x" * 129, "1 to 128"),
        ("tags", "Team=vision", "tag key"),
        ("tags", "team=a,team=b", "given twice"),
        ("tags", "team", "not key=value"),
        ("tags", "team=a b", "value"),
        ("tags", ",".join(f"k{i}=v" for i in range(17)), "at most 16"),
        ("preprocess", "not json", "not JSON"),
        ("preprocess", '{"crop": [100000, 100000]}', "at most 2048"),
        ("preprocess", '{"channels": 1, "mean": [0.5, 0.5, 0.5]}', "one per channel"),
        ("label_space", "digits and more", "label_space"),
    ],
)
def test_bad_upload_fields_are_refused_before_anything_is_stored(
    api: TestClient, digit_programs: dict[str, Path], field: str, value: str, says: str
) -> None:
    data = digit_programs["ccexam"].read_bytes()
    answer = api.post("/v1/checkpoints", files={"file": ("c.pt2", data)}, data={field: value})
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_upload"), answer.text
    assert says in answer.json()["message"]
    listed = api.post("/v1/checkpoints", files={"file": ("c.pt2", data)})
    assert listed.status_code == 201  # nothing of the refused upload was kept


def test_a_program_describes_itself_through_its_zootriage_json(api: TestClient, tmp_path: Path) -> None:
    from ccexam.models import MNISTNet

    metadata = ProgramMetadata(
        preprocess=PRESETS["mnist"], label_space="digits", architecture="MNISTNet", name="exported cnn"
    )
    path = export_program(MNISTNet(28), (1, 28, 28), metadata, tmp_path / "cnn.pt2")
    stored = upload(api, path, "cnn.pt2")
    described = (stored["architecture"], stored["name"], stored["filename"])
    assert described == ("MNISTNet", "exported cnn", "cnn.pt2")

    broken = tmp_path / "broken.pt2"
    export_program(MNISTNet(28), (1, 28, 28), ProgramMetadata(), broken)
    _rewrite_metadata(broken, b'{"preprocess": {"channels": 2}}')
    refused = api.post("/v1/checkpoints", files={"file": ("broken.pt2", broken.read_bytes())})
    assert (refused.status_code, refused.json()["code"]) == (422, "bad_checkpoint")
    assert "broken.pt2" in refused.json()["message"] and "zootriage.json" in refused.json()["message"]

    # its own name and architecture are shown on pages and printed by the command line: no control
    # character (a NUL was a database error after the file was stored; an escape reached terminals)
    for field, value in (("architecture", "Net\u0000"), ("name", "ok\u001b[8mhidden"), ("name", "a\u202eb")):
        _rewrite_metadata(broken, json.dumps({field: value}).encode())
        refused = api.post("/v1/checkpoints", files={"file": ("broken.pt2", broken.read_bytes())})
        assert (refused.status_code, refused.json()["code"]) == (422, "bad_checkpoint"), (field, refused.text)
        assert field in refused.json()["message"] and "control" in refused.json()["message"]


def _rewrite_metadata(path: Path, content: bytes) -> None:
    import zipfile

    with zipfile.ZipFile(path) as source:
        members = [(info, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, "w") as target:
        for info, data in members:
            target.writestr(info, content if info.filename.endswith("extra/zootriage.json") else data)


def job_body(model: dict[str, Any], **labels: Any) -> dict[str, Any]:
    return {
        "model": model,
        "dataset": DIGITS,
        "sampling": SAMPLING.model_dump(mode="json"),
        "protocol": PROTOCOL.to_dict(),
        **labels,
    }


def test_jobs_take_a_name_and_tags_or_inherit_their_checkpoints(
    api: TestClient, database_url: str, small_programs: list[Path]
) -> None:
    stored = upload(
        api, small_programs[0], "lenet.pt2", name="lenet clean", tags="team=robust",
        preprocess=json.dumps(MNIST_NORMALISED), label_space="digits",
    )
    model = {"source": "checkpoint", "path": stored["model_path"]}
    inherited = api.post("/v1/jobs", json=job_body(model))
    assert inherited.status_code == 202, inherited.text
    assert (inherited.json()["name"], inherited.json()["tags"]) == ("lenet clean", {"team": "robust"})
    with session_scope(database_url) as session:
        job = session.get(Job, uuid.UUID(inherited.json()["id"]))
        assert job is not None
        assert job.request["model"]["preprocess"]["mean"] == [0.1307]  # the upload's, into the request key
        assert job.request["model"]["label_space"] == "digits" and "name" not in job.request

    # A name does not change what is computed: the same request joins the active job.
    same = api.post("/v1/jobs", json=job_body(model, name="other", tags={"stage": "ci"}))
    assert same.json()["id"] == inherited.json()["id"]

    own_model = {**model, "label_space": "other-digits"}
    own = api.post("/v1/jobs", json=job_body(own_model, name="mine", tags={"stage": "ci"}))
    assert own.status_code == 202 and own.json()["id"] != inherited.json()["id"]
    assert (own.json()["name"], own.json()["tags"]) == ("mine", {"stage": "ci"})

    for bad in ({"name": " padded"}, {"tags": {"Key": "v"}}, {"tags": {"k": "a,b"}}, {"name": "x" * 129}):
        refused = api.post("/v1/jobs", json=job_body(model, **bad))
        assert (refused.status_code, refused.json()["code"]) == (422, "invalid_request"), bad


def stored_run(
    database_url: str,
    key: str,
    model: dict[str, Any],
    *,
    name: str | None = None,
    tags: dict[str, str] | None = None,
    weights: str | None = None,
    markers: dict[str, float] | None = None,
    warnings: list[str] | None = None,
) -> uuid.UUID:
    """A run as the worker stores it, found by the request key of ``model`` on the digits sample."""
    request = JobRequest.model_validate(job_body(model))
    run = Run(
        run_key=hashlib.sha256(key.encode()).hexdigest(),
        request_key=request_key(normalised_request(request)),
        model_ref=model,
        name=name,
        tags=[RunTag(key=k, value=v) for k, v in (tags or {}).items()],
        architecture="torch.export",
        weights_sha256=weights or hashlib.sha256(key.encode()).hexdigest(),
        dataset_ref=DIGITS,
        dataset_fingerprint=sample(open_dataset(BuiltinRef(name="digits"), None), SAMPLING).fingerprint,
        sampling=SAMPLING.model_dump(mode="json"),
        protocol=PROTOCOL.to_dict(),
        model_meta={"warnings": warnings or []},
        code_version="test",
        device="cpu",
        n_images=10,
        timings={},
        markers=[
            Marker(name=n, value=v, std=0.001, applicable=True, version="1")
            for n, v in (markers or {"dimension": 2.0, "utilization": 0.4, "id_accuracy": 0.9}).items()
        ],
    )
    with session_scope(database_url) as session:
        session.add(run)
        session.flush()
        return run.id


def test_the_history_filters_by_name_and_every_tag_and_labels_each_run(
    api: TestClient, database_url: str, small_programs: list[Path]
) -> None:
    stored = upload(api, small_programs[1], "lenet_adv.pt2")
    uploaded = {"source": "checkpoint", "path": stored["model_path"]}
    plain = {"source": "checkpoint", "path": "f" * 64 + ".pt2"}
    a = stored_run(database_url, "a", plain, name="alpha", tags={"team": "vision", "stage": "ci"})
    b = stored_run(database_url, "b", plain, name="beta", tags={"team": "vision", "stage": "prod"})
    c = stored_run(database_url, "c", uploaded, tags={"team": "audio"}, weights=stored["id"],
                   warnings=["no preprocessing given: ..."])
    d = stored_run(database_url, "d", plain)

    def ids(query: str) -> set[str]:
        answer = api.get(f"/v1/runs?{query}")
        assert answer.status_code == 200, answer.text
        return {item["id"] for item in answer.json()["items"]}

    assert ids("tag=team=vision") == {str(a), str(b)}
    assert ids("tag=team=vision&tag=stage=ci") == {str(a)}  # every tag must hold
    assert ids("tag=team=vision&tag=stage=nope") == set()
    assert ids("name=beta") == {str(b)}
    assert ids("name=beta&tag=team=audio") == set()
    first = api.get("/v1/runs?tag=team=vision&limit=1").json()
    second = api.get(f"/v1/runs?tag=team=vision&limit=1&cursor={first['next_cursor']}").json()
    assert {first["items"][0]["id"], second["items"][0]["id"]} == {str(a), str(b)}
    assert second["next_cursor"] is None

    items = {item["id"]: item for item in api.get("/v1/runs").json()["items"]}
    assert (items[str(a)]["label"], items[str(a)]["tags"]) == ("alpha", {"stage": "ci", "team": "vision"})
    assert items[str(c)]["label"] == "lenet_adv.pt2"
    assert items[str(c)]["warnings"] == ["no preprocessing given: ..."]
    assert items[str(d)]["label"] == "ckpt:ffffffffffff.pt2"
    assert not HASH.search(json.dumps([item["label"] for item in items.values()]))
    detail = api.get(f"/v1/runs/{c}").json()
    assert detail["label"] == "lenet_adv.pt2" and detail["warnings"] and detail["tags"] == {"team": "audio"}
    csv_head = api.get("/v1/runs?format=csv&tag=team=audio").text.splitlines()
    assert csv_head[0].startswith("id,created_at,name,tags") and len(csv_head) == 2

    for bad in ("tag=team", "tag=Team=x", "tag=team=a%20b"):
        refused = api.get(f"/v1/runs?{bad}")
        assert (refused.status_code, refused.json()["code"]) == (422, "invalid_request"), bad


def test_rankings_and_gates_call_candidates_by_name_then_file_name(
    api: TestClient, database_url: str, small_programs: list[Path]
) -> None:
    first = upload(api, small_programs[0], "lenet_clean.pt2")
    second = upload(api, small_programs[1], "lenet_adv.pt2")
    models = [{"source": "checkpoint", "path": row["model_path"]} for row in (first, second)]
    stored_run(database_url, "clean", models[0], weights=first["id"],
               markers={"dimension": 3.0, "utilization": 0.6, "id_accuracy": 0.9})
    adv = stored_run(database_url, "adv", models[1], weights=second["id"],
                     markers={"dimension": 2.0, "utilization": 0.3, "id_accuracy": 0.95})

    body = {
        "candidates": [{"model": models[0], "name": "clean lenet", "tags": {"team": "robust"}}, models[1]],
        "dataset": DIGITS,
        "sampling": SAMPLING.model_dump(mode="json"),
        "protocol": PROTOCOL.to_dict(),
        "rule": "geometry",  # geometry and ID accuracy pick differently here: both labels are shown
    }
    ranked = api.post("/v1/rankings", json=body)
    assert ranked.status_code == 200, ranked.text
    answer = ranked.json()
    assert [e["label"] for e in answer["entries"]] == ["clean lenet", "lenet_adv.pt2"]
    assert answer["pick"] == "clean lenet" and answer["id_accuracy_pick"] == "lenet_adv.pt2"
    assert not HASH.search(json.dumps({k: v for k, v in answer.items() if k != "entries"}))

    same_names = {**body, "candidates": [{"model": m, "name": "twin"} for m in models]}
    labels = [e["label"] for e in api.post("/v1/rankings", json=same_names).json()["entries"]]
    assert len(set(labels)) == 2 and all(text.startswith("twin (ckpt:") for text in labels)
    assert not HASH.search(json.dumps(labels))

    gate = {
        "candidate": {"model": models[0], "name": "release candidate"},
        "baseline": {"source": "run", "id": str(adv)},
        "dataset": DIGITS,
        "sampling": SAMPLING.model_dump(mode="json"),
        "protocol": PROTOCOL.to_dict(),
        "rules": ["dimension: max_relative_drop 0.05"],
    }
    decided = api.post("/v1/gates", json=gate)
    assert decided.status_code == 201, decided.text
    assert (decided.json()["candidate_label"], decided.json()["baseline_label"]) == (
        "release candidate", "lenet_adv.pt2"
    )
    listed = api.get("/v1/gates").json()["items"][0]
    assert listed["candidate_label"] == "release candidate"
    with session_scope(database_url) as session:
        assert session.scalars(select(Job)).all() == []  # every run was found: nothing was queued
