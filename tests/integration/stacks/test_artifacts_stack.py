"""A run's artifacts on the real stack (uvicorn, a Celery worker process, Redis, PostgreSQL): the MNIST
CNN scored by the worker, its features and report downloaded over HTTP and with ``zootriage download``,
and checked against the feature-cache entry the worker wrote, read independently with numpy and
safetensors."""

from __future__ import annotations

import json
import traceback
import uuid
from pathlib import Path

import httpx
import numpy as np
import pytest
from click.testing import Result
from safetensors import safe_open
from sqlalchemy import select
from typer.testing import CliRunner

from tests.integration.jobs import upload, wait
from tests.integration.stack import Stack
from zootriage.app.cli import app as cli
from zootriage.app.db.models import Job, Marker
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings
from zootriage.app.storage import feature_store
from zootriage.core.storage import LocalStore, feature_entry

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("wide_consoles")]  # a real job through the stack

# A sample no other stack test extracts (31 per class), disjoint repeats: every marker has a std.
BODY_PARTS = {
    "dataset": {"source": "builtin", "name": "mnist"},
    "sampling": {"per_class": 31, "split": "test"},
    "protocol": {"n_t": 40, "points_per_class": 6, "repeats": 5, "seed": 4},
}


def zootriage(stack: Stack, *args: str) -> Result:
    """``zootriage ARGS`` in this process against the stack; its output with line breaks undone."""
    env = {"ZOOTRIAGE_URL": stack.base_url, "ZOOTRIAGE_API_KEY": None}
    result = CliRunner().invoke(cli, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError("".join(traceback.format_exception(*result.exc_info)))
    return result


@pytest.fixture
def run_id(stack: Stack, mnist_program: Path, clean_db: str) -> str:
    http = httpx.Client(base_url=stack.base_url, timeout=60)
    model = {"source": "checkpoint", "path": upload(http, mnist_program)}
    posted = http.post("/v1/jobs", json={"model": model, **BODY_PARTS})
    assert posted.status_code == 202, posted.text
    job, _ = wait(http, posted.headers["location"])
    assert job["status"] == "succeeded", job
    return str(job["run_id"])


def cached_entry(settings: Settings, database_url: str, run_id: str) -> Path:
    """The file the worker wrote for this run: its job's cache key, in the store the stack shares."""
    with session_scope(database_url) as session:
        record = session.scalar(select(Job.features).where(Job.run_id == uuid.UUID(run_id)))
    store = feature_store(settings)
    assert isinstance(store, LocalStore) and record is not None
    return store.path(feature_entry(record["cache_key"]))


def test_zootriage_download_writes_features_and_report_that_match_what_the_worker_stored(
    stack: Stack, run_id: str, settings: Settings, clean_db: str, tmp_path: Path
) -> None:
    entry = cached_entry(settings, clean_db, run_id)
    with np.load(entry) as stored:
        cached = {name: stored[name] for name in ("features", "logits", "labels")}
    assert cached["features"].shape[0] == cached["labels"].shape[0] == 310

    tensors = tmp_path / "f.safetensors"
    done = zootriage(stack, "download", run_id[:8], "--features", "-o", str(tensors))
    assert done.exit_code == 0, done.output
    with safe_open(str(tensors), framework="numpy") as opened:
        assert set(opened.keys()) == set(cached)
        for name, array in cached.items():
            got = opened.get_tensor(name)
            assert got.dtype == array.dtype and got.shape == array.shape
            np.testing.assert_array_equal(got, array)
        metadata = opened.metadata()
    assert metadata["run_id"] == run_id and json.loads(metadata["described"])["weights_sha256"]

    npz = tmp_path / "f.npz"
    as_npz = zootriage(stack, "download", run_id, "--features", "--format", "npz", "-o", str(npz))
    assert as_npz.exit_code == 0, as_npz.output
    assert npz.read_bytes() == entry.read_bytes()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]

    report = tmp_path / "r.json"
    as_json = zootriage(stack, "download", run_id, "--report", "--format", "json", "-o", str(report))
    assert as_json.exit_code == 0, as_json.output
    shown = {m["name"]: m for m in json.loads(report.read_text())["markers"]}
    with session_scope(clean_db) as session:
        markers = list(session.scalars(select(Marker).where(Marker.run_id == uuid.UUID(run_id))))
    assert len(shown) == len(markers) > 20
    for marker in markers:
        assert (shown[marker.name]["value"], shown[marker.name]["std"]) == (marker.value, marker.std)
    assert sum(m.std is not None for m in markers) >= len(markers) // 2

    html = tmp_path / "r.html"
    assert zootriage(stack, "download", run_id, "--report", "-o", str(html)).exit_code == 0
    text = html.read_text()
    assert all(f'id="marker-{m.name}"' in text for m in markers) and "<svg" in text


def test_zootriage_download_fails_in_one_line_and_leaves_the_file_alone(
    stack: Stack, run_id: str, settings: Settings, clean_db: str, tmp_path: Path
) -> None:
    out = tmp_path / "kept.safetensors"
    out.write_bytes(b"what was there")
    cached_entry(settings, clean_db, run_id).unlink()  # the cache lost it
    gone = zootriage(stack, "download", run_id, "--features", "-o", str(out))
    assert gone.exit_code == 2
    said = " ".join(gone.output.split())  # rich wraps long lines
    assert "features_gone" in said and "another protocol seed" in said
    assert "Traceback" not in gone.output
    assert out.read_bytes() == b"what was there"

    unknown = zootriage(stack, "download", "0123abcd", "--features", "-o", str(out))
    assert unknown.exit_code == 2 and "run_not_found" in unknown.output
    for args, said in (
        (("--features", "--report"), "exactly one"),
        ((), "exactly one"),
        (("--report", "--format", "npz"), "html or json"),
        (("--features", "--format", "csv"), "safetensors or npz"),
        (("--report", "-o", str(tmp_path / "no" / "such" / "r.html")), "does not exist"),
    ):
        refused = zootriage(stack, "download", run_id, *args)
        assert refused.exit_code == 2 and said in " ".join(refused.output.split()), (args, refused.output)
    assert out.read_bytes() == b"what was there"
