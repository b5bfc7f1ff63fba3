"""A run's artifacts through the API against PostgreSQL, on a run of the real MNIST CNN scored by the
real worker code and sandboxed child in this process (``run_job``): its features in both formats equal
to the cache entry the worker wrote, its report (JSON and one self-contained HTML file), the CSV's
noise and dataset columns, a cache that lost the entry, and who may read them."""

from __future__ import annotations

import csv
import io
import math
import re
import uuid
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from fastapi.testclient import TestClient
from safetensors.numpy import load as load_safetensors
from scipy import stats
from sqlalchemy import select

from tests.integration.access import PUBLIC, app_client, stored_key
from tests.integration.jobs import run_job
from tests.integration.servers import S3Server
from tests.integration.stored_runs import stored_run
from zootriage.app.api_keys import Scope, create_api_key
from zootriage.app.db.models import Job, Marker, Run
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings
from zootriage.app.storage import feature_store
from zootriage.core.markers import list_markers
from zootriage.core.storage import LocalStore, feature_entry

pytestmark = pytest.mark.slow  # real jobs, one sandboxed child each

# Disjoint repeats (20 images per class = 5 repeats × 4 points): every marker gets a std.
PROTOCOL = {"n_t": 40, "points_per_class": 4, "repeats": 5, "seed": 7}
SAMPLING = {"per_class": 20, "split": "test"}


@pytest.fixture
def scored(
    client: TestClient, settings: Settings, monkeypatch: pytest.MonkeyPatch, program_ref: dict[str, Any]
) -> dict[str, Any]:
    """A succeeded job of the MNIST program on MNIST test images, its run stored."""
    job = run_job(client, settings, monkeypatch, program_ref, sampling=SAMPLING, protocol=PROTOCOL)
    assert job["status"] == "succeeded", job
    return job


def cache_path(settings: Settings, database_url: str, run_id: str) -> Path:
    """Where the worker left the run's features: the cache key its job recorded, in the local store."""
    with session_scope(database_url) as session:
        record = session.scalar(select(Job.features).where(Job.run_id == uuid.UUID(run_id)))
    assert record and record["cache_key"], record
    store = feature_store(settings)
    assert isinstance(store, LocalStore)
    return store.path(feature_entry(record["cache_key"]))


def stored_markers(database_url: str, run_id: str) -> dict[str, tuple[float | None, float | None]]:
    with session_scope(database_url) as session:
        rows = session.scalars(select(Marker).where(Marker.run_id == uuid.UUID(run_id)))
        return {m.name: (m.value, m.std) for m in rows}


def test_features_download_as_npz_and_safetensors_equal_the_cache_entry_until_it_is_gone(
    client: TestClient, scored: dict[str, Any], settings: Settings, clean_db: str
) -> None:
    run_id = scored["run_id"]
    with np.load(cache_path(settings, clean_db, run_id)) as entry:
        cached = {name: entry[name] for name in ("features", "logits", "labels", "described")}
    assert cached["features"].shape == (200, cached["features"].shape[1]) and cached["features"].shape[1] > 1
    short = run_id.replace("-", "")[:8]

    npz = client.get(f"/v1/runs/{run_id}/features?format=npz")
    assert npz.status_code == 200, npz.text
    assert npz.headers["content-type"] == "application/zip"
    assert npz.headers["content-disposition"] == f'attachment; filename="run-{short}-features.npz"'
    assert int(npz.headers["content-length"]) == len(npz.content)
    with np.load(io.BytesIO(npz.content)) as got:
        for name, array in cached.items():
            np.testing.assert_array_equal(got[name], array)

    tensors = client.get(f"/v1/runs/{short}/features")  # safetensors by default; a short id is enough
    assert tensors.status_code == 200, tensors.text
    disposition = f'attachment; filename="run-{short}-features.safetensors"'
    assert tensors.headers["content-disposition"] == disposition
    assert int(tensors.headers["content-length"]) == len(tensors.content)
    loaded = load_safetensors(tensors.content)
    assert set(loaded) == {"features", "logits", "labels"}
    for name, array in loaded.items():
        assert array.dtype == cached[name].dtype and array.shape == cached[name].shape
        np.testing.assert_array_equal(array, cached[name])
    assert loaded["labels"].tolist().count(3) == 20  # 20 images of each digit


    # The cache loses the entry: damaged first, then removed.
    path = cache_path(settings, clean_db, run_id)
    path.write_bytes(path.read_bytes()[:100])  # damaged: a download would be garbage
    damaged = client.get(f"/v1/runs/{run_id}/features")
    assert (damaged.status_code, damaged.json()["code"]) == (404, "features_gone")
    assert "damaged" in damaged.json()["message"]
    path.unlink()
    for fmt in ("npz", "safetensors"):
        gone = client.get(f"/v1/runs/{run_id}/features?format={fmt}")
        assert (gone.status_code, gone.json()["code"]) == (404, "features_gone"), gone.text
        message = gone.json()["message"]
        assert "removed" in message and "another protocol seed" in message  # builtin data: a stored run
    lonely = stored_run(clean_db, "lonely", {"dimension": 1.5})  # stored with no job behind it
    orphan = client.get(f"/v1/runs/{lonely}/features")
    assert (orphan.status_code, orphan.json()["code"]) == (404, "features_gone")
    assert "no job of this run recorded its extraction" in orphan.json()["message"]
    alone = client.get(f"/v1/runs/{lonely}/report").json()
    assert alone["provenance"]["job_id"] is None and alone["provenance"]["jobs_linked"] == 0
    assert [(m["name"], m["value"], m["std"]) for m in alone["markers"]] == [("dimension", 1.5, 0.001)]
    unknown = client.get(f"/v1/runs/{uuid.uuid4()}/features")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "run_not_found")
    assert client.get(f"/v1/runs/{run_id}/features?format=zip").status_code == 422


class _References(HTMLParser):
    """Every attribute that makes a browser fetch or follow something, and every inline CSS url()."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in {"src", "href", "xlink:href", "srcset", "action", "poster", "data", "formaction"}:
                self.found.append((tag, name, value or ""))


def test_the_report_carries_every_marker_with_its_noise_and_the_provenance_in_json_and_html(
    client: TestClient, scored: dict[str, Any], clean_db: str
) -> None:
    run_id = scored["run_id"]
    answer = client.get(f"/v1/runs/{run_id}/report")
    assert answer.status_code == 200, answer.text
    report = answer.json()
    markers = stored_markers(clean_db, run_id)
    assert {m["name"] for m in report["markers"]} == set(markers) == {s.name for s in list_markers()}
    with_noise = 0
    t = stats.t.ppf(0.975, PROTOCOL["repeats"] - 1)
    for m in report["markers"]:
        value, std = markers[m["name"]]
        assert (m["value"], m["std"]) == (value, std), m["name"]
        if std is None or value is None:
            assert m["se"] is None and m["interval"] is None
            continue
        with_noise += 1
        se = std / math.sqrt(PROTOCOL["repeats"])
        assert m["se"] == pytest.approx(se) and m["df"] == PROTOCOL["repeats"] - 1
        assert m["interval"] == pytest.approx([value - t * se, value + t * se])
    assert with_noise >= len(markers) // 2  # disjoint repeats: most markers measured their noise
    with session_scope(clean_db) as session:
        run = session.get(Run, uuid.UUID(run_id))
        assert run is not None
        job = session.get(Job, uuid.UUID(scored["id"]))
        assert job is not None
        assert report["model"]["weights_sha256"] == run.weights_sha256
        assert report["dataset"]["fingerprint"] == run.dataset_fingerprint
        assert report["code_version"] == run.code_version and report["device"] == run.device
        assert report["timings"] == run.timings
        assert report["provenance"]["job_created_at"].startswith(job.created_at.strftime("%Y-%m-%dT%H:%M"))
    assert report["dataset"]["reference"] == "builtin:mnist"
    assert report["protocol"]["n_t"] == 40 and report["sampling"]["per_class"] == 20
    assert report["provenance"]["job_id"] == scored["id"] and report["provenance"]["jobs_linked"] == 1
    html_report_names_no_address(client, run_id, scored["id"], clean_db)
    run_page_links_its_downloads(client, run_id)


def html_report_names_no_address(client: TestClient, run_id: str, job_id: str, database_url: str) -> None:
    """The HTML report: one file with no reference out of itself, every stored marker and std in it."""
    answer = client.get(f"/v1/runs/{run_id}/report?format=html")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    short = run_id.replace("-", "")[:8]
    assert f'filename="run-{short}-report.html"' in answer.headers["content-disposition"]
    html = answer.text
    parser = _References()
    parser.feed(html)
    assert "svg" in parser.tags and "style" in parser.tags and "link" in parser.tags  # plot, CSS, icon
    style = html[html.index("<style>") : html.index("</style>")]
    assert "dl.fields" in style and "&#34;" not in style and "&quot;" not in style  # the CSS, verbatim
    outside = [ref for ref in parser.found if not ref[2].startswith(("data:", "#"))]
    assert outside == [], outside
    assert all(target.startswith("#") for target in re.findall(r"url\(\s*['\"]?([^)'\"]*)", html))
    assert "@import" not in html and "http://" not in html and "https://" not in html and "//" not in html
    for name, (value, std) in stored_markers(database_url, run_id).items():
        row = html[html.index(f'id="marker-{name}"') :].split("</tr>", 1)[0]
        assert f'data-value="{value if value is not None else ""}"' in row, name
        assert f'data-std="{std if std is not None else ""}"' in row, name
    assert "builtin:mnist" in html and job_id in html


def test_the_csv_has_each_markers_std_and_the_dataset_and_artifacts_need_a_key_that_may_read_the_run(
    client: TestClient, scored: dict[str, Any], settings: Settings, clean_db: str
) -> None:
    rows = list(csv.reader(io.StringIO(client.get("/v1/runs?format=csv").text)))
    head, (row,) = rows[0], rows[1:]
    names = [spec.name for spec in list_markers()]
    for name in names:
        assert head[head.index(name) + 1] == f"{name}_std"
    cells = dict(zip(head, row, strict=True))
    assert cells["dataset"] == "builtin:mnist"
    for name, (value, std) in stored_markers(clean_db, scored["run_id"]).items():
        assert cells[name] == ("" if value is None else repr(value)), name
        assert cells[f"{name}_std"] == ("" if std is None else repr(std)), name

    # Off loopback, the artifacts need a valid key with the read scope, like every run route, and a key
    # limited to projects sees only their runs (the job ran in the default project).
    run_id = scored["run_id"]
    reader = stored_key(clean_db, Scope.read, name="reader")
    with session_scope(clean_db) as session:
        other_project = create_api_key(session, "other", frozenset({Scope.write}), frozenset({"away"})).key
        same_project = create_api_key(session, "same", frozenset({Scope.read}), frozenset({"default"})).key
    paths = (f"/v1/runs/{run_id}/features", f"/v1/runs/{run_id}/features?format=npz",
             f"/v1/runs/{run_id}/report", f"/v1/runs/{run_id}/report?format=html")
    with app_client(settings, **PUBLIC) as public:
        for path in paths:
            anonymous = public.get(path)
            assert (anonymous.status_code, anonymous.json()["code"]) == (401, "unauthorized"), path
            forged = public.get(path, headers={"X-API-Key": "zt_not_a_key"})
            assert (forged.status_code, forged.json()["code"]) == (401, "unauthorized"), path
            assert public.get(path, headers={"X-API-Key": reader}).status_code == 200, path
            assert public.get(path, headers={"X-API-Key": same_project}).status_code == 200, path
            foreign = public.get(path, headers={"X-API-Key": other_project})
            assert (foreign.status_code, foreign.json()["code"]) == (403, "forbidden"), path
        for path in (f"/runs/{run_id}/report.html", f"/runs/{run_id}/features.npz"):  # the pages' routes
            assert public.get(path, headers={"X-API-Key": other_project}).status_code == 403, path
            assert public.get(path, headers={"X-API-Key": same_project}).status_code == 200, path
        page = public.get(f"/runs/{run_id}/report.html", follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"].startswith("/login?")


def run_page_links_its_downloads(client: TestClient, run_id: str) -> None:
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    for link in (f"/runs/{run_id}/report.html", f"/runs/{run_id}/features.safetensors",
                 f"/runs/{run_id}/features.npz"):
        assert f'href="{link}"' in page.text
        assert client.get(link).status_code == 200, link
    assert "<table id=\"markers-table\">" in client.get(f"/runs/{run_id}/report.html").text


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3Server]:
    server = S3Server()
    server.start()
    yield server
    server.stop()


def test_features_stream_from_an_object_store_with_nothing_left_behind(
    settings: Settings,
    clean_db: str,
    s3_server: S3Server,
    mnist_program: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """A deployment's S3 store: the API copies the entry into scratch, unlinks it at once, and streams."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    bucket = f"zt-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server.url).create_bucket(Bucket=bucket)
    deployed = settings.model_copy(
        update={"storage_url": f"s3://{bucket}/zoo?endpoint={s3_server.url}", "cache_dir": tmp_path / "api"}
    )
    with app_client(deployed) as client:
        uploaded = client.post("/v1/checkpoints", files={"file": ("m.pt2", mnist_program.read_bytes())})
        model = {"source": "checkpoint", "path": uploaded.json()["model_path"]}
        job = run_job(client, deployed, monkeypatch, model, sampling=SAMPLING, protocol=PROTOCOL)
        assert job["status"] == "succeeded", job
        with session_scope(clean_db) as session:
            record = session.scalar(select(Job.features).where(Job.run_id == uuid.UUID(job["run_id"])))
        assert record is not None
        stored = boto3.client("s3", endpoint_url=s3_server.url).get_object(
            Bucket=bucket, Key=f"zoo/features/{record['cache_key']}.npz"
        )["Body"].read()
        npz = client.get(f"/v1/runs/{job['run_id']}/features?format=npz")
        assert npz.status_code == 200 and npz.content == stored
        tensors = load_safetensors(client.get(f"/v1/runs/{job['run_id']}/features").content)
        with np.load(io.BytesIO(stored)) as entry:
            for name, array in tensors.items():
                np.testing.assert_array_equal(array, entry[name])
    assert not [p for p in (tmp_path / "api").rglob("*") if p.is_file()]  # the copies went with the answers
