"""The client commands keep what they are told, against the in-process API on the real PostgreSQL:
``--preprocess``, ``--label-space``, ``--name`` and ``--tag`` reach the job for a local file and for an
upload id alike; a file uploaded earlier under other labels is the same checkpoint (never a 409) in
``submit``, ``rank`` and ``gate``; ``label`` renames and retags a run after scoring.

The commands run in this process (Typer's runner) with their HTTP client pointed at the app under
test; no job is published to a broker (nothing here needs one computed)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from tests.conftest import MNIST_RAW
from tests.integration.access import app_client
from tests.integration.stored_runs import stored_run
from zootriage.app.cli import app as cli
from zootriage.app.cli.client import Client
from zootriage.app.db.models import Checkpoint, Job, Run
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings

SCORING = ["--dataset", "builtin:digits", "--classes", "2", "--per-class", "5", "--n-t", "20",
           "--points-per-class", "5"]
MARKERS: dict[str, float | None] = {
    "dimension": 2.0, "utilization": 0.4, "id_accuracy": 0.9, "capacity": 0.5, "radius": 1.0
}

pytestmark = pytest.mark.usefixtures("wide_consoles")


@pytest.fixture
def in_process(settings: Settings, clean_db: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    """The commands' HTTP client is the app under test (taking the LeNet5 programs, over the usual
    test limit); queued jobs are not published."""
    import zootriage.app.services.jobs as jobs

    monkeypatch.setattr(jobs, "enqueue_score", lambda *_args, **_kwargs: None)
    with app_client(settings, upload_limit_bytes=16 * 1024 * 1024) as client:

        def use_app(self: Client, _url: str, api_key: str | None, _timeout: float = 120.0) -> None:
            self.http = cast(Any, client)  # the same request interface as httpx.Client

        monkeypatch.setattr(Client, "__init__", use_app)
        yield client


def zootriage(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200", "ZOOTRIAGE_API_KEY": None})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(repr(result.exception)) from result.exception
    return result


def upload(api: TestClient, path: Path, **fields: str) -> dict[str, Any]:
    answer = api.post("/v1/checkpoints", files={"file": (path.name, path.read_bytes())}, data=fields)
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def job_row(database_url: str, job_id: str) -> tuple[dict[str, Any], str | None, dict[str, str]]:
    with session_scope(database_url) as session:
        job = session.get(Job, uuid.UUID(job_id))
        assert job is not None
        return dict(job.request), job.name, dict(job.tags)


@pytest.mark.parametrize("by", ["model path", "upload id", "local file"])
def test_submit_puts_preprocessing_label_space_name_and_tags_on_the_job(
    in_process: TestClient, clean_db: str, digit_programs: dict[str, Path], by: str
) -> None:
    path = digit_programs["ccexam"]
    stored = upload(in_process, path, name="uploaded earlier", tags="team=audio")
    given = {"model path": stored["model_path"], "upload id": stored["id"], "local file": str(path)}
    model = f"ckpt:{given[by]}"
    answer = zootriage(
        "submit", model, *SCORING, "--preprocess", json.dumps(MNIST_RAW), "--label-space", "letters",
        "--name", "mine", "--tag", "team=vision", "--json",
    )
    assert answer.exit_code == 0, answer.stderr
    job = json.loads(answer.stdout)
    assert (job["name"], job["tags"]) == ("mine", {"team": "vision"})
    request, name, tags = job_row(clean_db, job["id"])
    assert request["model"]["path"] == stored["model_path"]
    assert request["model"]["preprocess"]["std"] == [1.0] and request["model"]["label_space"] == "letters"
    assert (name, tags) == ("mine", {"team": "vision"})
    with session_scope(clean_db) as session:  # the upload's record is as it was first stored
        row = session.get(Checkpoint, stored["id"])
        assert row is not None
        assert (row.name, row.tags, row.preprocess) == ("uploaded earlier", {"team": "audio"}, None)


def test_submit_answered_by_a_stored_run_gives_it_the_name_and_tags(
    in_process: TestClient, clean_db: str, digit_programs: dict[str, Path]
) -> None:
    stored = upload(in_process, digit_programs["ccexam"], name="old")
    model = {"source": "checkpoint", "path": stored["model_path"]}
    run_id = stored_run(clean_db, "stored", MARKERS, model=model)
    answer = zootriage("submit", f"ckpt:{digit_programs['ccexam']}", *SCORING, "--name", "new", "--tag",
                       "stage=ci", "--json")
    assert answer.exit_code == 0, answer.stderr
    run = json.loads(answer.stdout)
    assert (run["id"], run["name"], run["tags"]) == (str(run_id), "new", {"stage": "ci"})
    with session_scope(clean_db) as session:
        row = session.get(Run, run_id)
        assert row is not None and (row.name, row.tag_map) == ("new", {"stage": "ci"})


def test_rank_and_gate_reuse_a_file_uploaded_under_other_labels(
    in_process: TestClient, clean_db: str, digit_programs: dict[str, Path]
) -> None:
    paths = [digit_programs["clntrained"], digit_programs["advtrained"]]
    for i, path in enumerate(paths):  # uploaded earlier (say, from the page) with a name and tags
        stored = upload(in_process, path, name=f"net {i}", tags=f"team=t{i}")
        stored_run(clean_db, f"net-{i}", {**MARKERS, "dimension": 2.0 + i},
                   model={"source": "checkpoint", "path": stored["model_path"]})
    ranked = zootriage("rank", *(f"ckpt:{p}" for p in paths), *SCORING, "--rule", "dimension", "--json")
    assert ranked.exit_code == 0, ranked.stderr
    assert len(json.loads(ranked.stdout)["entries"]) == 2
    gated = zootriage("gate", "--candidate", f"ckpt:{paths[1]}", "--baseline", f"ckpt:{paths[0]}", *SCORING,
                      "--rule", "dimension: max 1000", "--json")
    assert gated.exit_code in (0, 1, 3), gated.stderr  # decided (2 would be an error such as a 409)
    assert json.loads(gated.stdout)["id"]
    with session_scope(clean_db) as session:
        assert session.query(Job).count() == 0  # every answer came from the stored runs


def test_label_renames_and_retags_a_run(in_process: TestClient, clean_db: str) -> None:
    run_id = stored_run(clean_db, "to-label", MARKERS)
    named = zootriage("label", str(run_id), "--name", "release 3", "--tag", "stage=prod", "--tag", "team=ml")
    assert named.exit_code == 0, named.stderr
    assert "release 3 [stage=prod team=ml]" in named.stdout
    untagged = zootriage("label", str(run_id), "--untag", "team", "--clear-name", "--json")
    assert untagged.exit_code == 0, untagged.stderr
    shown = json.loads(untagged.stdout)
    assert (shown["name"], shown["tags"]) == (None, {"stage": "prod"})


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "nothing to change"),
        (["--name", "x", "--clear-name"], "contradict"),
        (["--tag", "team"], "expected key=value"),
        (["--tag", "Team=x"], "422 (invalid_request: body: Value error, tag key 'Team'"),
        (["--name", " padded"], "422 (invalid_request: name: Value error, a name is printable"),
    ],
)
def test_label_refuses_bad_input_with_one_line_and_exit_2(
    in_process: TestClient, clean_db: str, args: list[str], says: str
) -> None:
    run_id = stored_run(clean_db, "kept", MARKERS)
    refused = zootriage("label", str(run_id), *args)
    assert refused.exit_code == 2 and says in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    missing = zootriage("label", str(uuid.uuid4()), "--name", "x")
    assert missing.exit_code == 2 and "run_not_found" in missing.stderr


@pytest.mark.parametrize(
    ("model", "option", "says"),
    [
        ("tv:resnet18.IMAGENET1K_V1", ["--label-space", "x"], "apply to a checkpoint"),
        ("ckpt:" + "a" * 64 + ".pt2", ["--preprocess", "{not json"], "--preprocess is not JSON"),
        ("ckpt:" + "a" * 64 + ".pt2", ["--preprocess", '{"channels": 2}'], "bad_reference"),
    ],
)
def test_submit_refuses_options_that_do_not_fit_the_model(
    in_process: TestClient, clean_db: str, model: str, option: list[str], says: str
) -> None:
    refused = zootriage("submit", model, *SCORING, *option)
    assert refused.exit_code == 2 and says in refused.stderr, refused.stderr
    with session_scope(clean_db) as session:
        assert session.query(Job).count() == 0
