"""What the pages show a person: the score form submits a torchvision model, finished jobs show their
real wall time (first claim to finish, every stage) and their queue wait, and run and gate pages show
stored references and tags field by field, never as a raw dict (rows written straight into the
database; the form through the in-process app)."""

from __future__ import annotations

import html
import os
import re
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import torchvision
from fastapi.testclient import TestClient
from sqlalchemy import select

from tests.integration.seeding import BASE_TIME, fake_run
from zootriage.app.db.models import Gate, Job, JobStatus, RunTag
from zootriage.app.db.session import session_scope

pytestmark = pytest.mark.integration

WEIGHTS = torchvision.models.ResNet18_Weights.IMAGENET1K_V1


def cached_weights(torch_home: Path) -> None:
    """torch hub's cache entry of ResNet18's V1 weights (a placeholder: the API checks that the file is
    there and never reads it), so that a submit of ``tv:resnet18.IMAGENET1K_V1`` is admitted offline."""
    cached = torch_home / "hub" / "checkpoints" / os.path.basename(WEIGHTS.url)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(b"placeholder")


def _alerts(page: str) -> list[str]:
    return [html.unescape(a) for a in re.findall(r'role="alert">([^<]*)<', page) if a.strip()]


def _post_form(client: TestClient, form: dict[str, str]) -> str:
    client.get("/")
    token = client.cookies.get("zt_csrf")
    assert token
    answer = client.post("/ui/jobs", data=form, headers={"X-CSRF-Token": token})
    assert answer.status_code == 200, answer.text[-400:]
    return answer.text


def _jobs(database_url: str) -> list[Job]:
    with session_scope(database_url) as session:
        found = list(session.scalars(select(Job)))
        session.expunge_all()
        return found


TORCHVISION_FORM = {
    "model_source": "torchvision", "model_name": "resnet18", "weights": WEIGHTS.name, "dataset": "digits",
    "per_class": "", "n_t": "", "seed": "0",
}


def test_the_score_form_queues_a_torchvision_model(
    client: TestClient, clean_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    cached_weights(tmp_path)
    answer = _post_form(client, TORCHVISION_FORM)
    assert _alerts(answer) == [], answer
    queued = re.search(r"queued job ([0-9a-f-]{36})", answer)
    assert queued, answer
    (job,) = _jobs(clean_db)
    assert str(job.id) == queued.group(1)
    assert job.request["model"] == {"source": "torchvision", "arch": "resnet18", "weights": WEIGHTS.name}
    # An empty weights field is the enum's DEFAULT, resolved at submit: the same request, the same job.
    default = _post_form(client, {**TORCHVISION_FORM, "weights": ""})
    assert f"queued job {job.id}" in default, default
    assert len(_jobs(clean_db)) == 1


def test_the_score_form_says_what_is_wrong_with_a_model_beside_its_field(
    client: TestClient, clean_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))  # no weights cached: nothing can be admitted
    missing = _post_form(client, TORCHVISION_FORM)
    assert "queued job" not in missing and _alerts(missing), missing
    unnamed = _post_form(client, {**TORCHVISION_FORM, "model_name": ""})
    assert any(a.startswith("invalid_request: model.torchvision.arch") for a in _alerts(unnamed)), unnamed
    timm = _post_form(client, {**TORCHVISION_FORM, "model_source": "timm", "model_name": "resnet18"})
    assert any("pretrained tag" in a for a in _alerts(timm)), timm
    assert _jobs(clean_db) == []


def finished_job(created_s: float, started_s: float | None, finished_s: float, last_stage_s: float) -> Job:
    """A finished job with the timestamps given (seconds after BASE_TIME) and the worker's
    ``duration_s`` of its last stage alone."""
    def at(seconds: float) -> datetime:
        return BASE_TIME + timedelta(seconds=seconds)

    return Job(
        request_key=uuid.uuid4().hex * 2,
        request={},
        request_hash=uuid.uuid4().hex * 2,
        status=JobStatus.succeeded.value,
        created_at=at(created_s),
        started_at=at(started_s) if started_s is not None else None,
        finished_at=at(finished_s),
        duration_s=last_stage_s,
    )


def _job_cells(page: str, job: Job) -> tuple[str, str]:
    row = re.search(rf"<tr class=\"job\"[^>]*>\s*<td><code>{str(job.id)[:8]}</code>.*?</tr>", page, re.S)
    assert row, page
    wall = re.search(r'class="num wall">([^<]*)<', row.group(0))
    queued = re.search(r'class="num queued">([^<]*)<', row.group(0))
    assert wall and queued, row.group(0)
    return wall.group(1), queued.group(1)


def test_finished_jobs_show_their_wall_time_from_first_claim_and_their_queue_wait(
    client: TestClient, clean_db: str
) -> None:
    """Queued 5 s, claimed for extraction at 5 s, handed to the marker stage, finished at 53.2 s: a
    48.2 s job whose last stage took 17.2 s. A job that never started has neither."""
    two_stage = finished_job(0.0, 5.0, 53.2, 17.2)
    never_started = finished_job(10.0, None, 11.0, 0.0)
    with session_scope(clean_db) as session:
        session.add_all([two_stage, never_started])
    page = client.get("/ui/jobs").text
    assert _job_cells(page, two_stage) == ("48.2", "5.0")
    assert _job_cells(page, never_started) == ("—", "—")
    assert "17.2" not in page
    assert _job_cells(client.get("/").text, two_stage) == ("48.2", "5.0")


NESTED_MODEL: dict[str, Any] = {
    "source": "checkpoint", "path": "ab" * 32 + ".pt2", "label_space": "digits",
    "preprocess": {"channels": 1, "crop": [28, 28], "mean": [0.1307], "std": [0.3081], "resize": None},
}


def _no_raw_dict(page: str) -> None:
    """Nothing in the page's main part reads like a Python or JSON dict (the header's ``hx-headers``
    attribute is JSON by design)."""
    text = page[page.index("<main"):]
    assert "{&#34;" not in text and '{"' not in text and "{'" not in text, text
    assert "<RunTag" not in text and "object at 0x" not in text, text


def test_run_pages_show_tags_as_chips_and_references_field_by_field(
    client: TestClient, clean_db: str
) -> None:
    with session_scope(clean_db) as session:
        run = fake_run(1)
        run.model_ref = NESTED_MODEL
        run.sampling = {"classes": [0, 1], "per_class": 250, "seed": 0, "split": None, "up_to": True}
        run.tags = [RunTag(key="team", value="vision"), RunTag(key="stage", value="ci")]
        session.add(run)
        session.flush()
        run_id = run.id
        job = finished_job(0.0, 5.0, 53.2, 17.2)
        job.run_id = run_id
        session.add(job)
    page = client.get(f"/runs/{run_id}")
    assert page.status_code == 200, page.text[-400:]
    _no_raw_dict(page.text)
    chips = re.findall(r'<code class="tag">([^<]*)</code>', page.text)
    assert sorted(chips) == ["stage=ci", "team=vision"]
    model = re.search(r'<dl class="fields" id="run-model">(.*?)</dl>', page.text, re.S)
    assert model, page.text
    rows = dict(re.findall(r"<dt>([^<]*)</dt><dd>([^<]*)</dd>", model.group(1)))
    assert rows["source"] == "checkpoint" and rows["label_space"] == "digits"
    assert rows["preprocess.crop"] == "28, 28" and rows["preprocess.mean"] == "0.1307"
    assert rows["preprocess.resize"] == "—"
    timing = dict(re.findall(r"<tr><td>(job [^<]*)</td><td class=\"num\">([^<]*)</td></tr>", page.text))
    assert timing == {
        "job wall time (first claim to finish)": "48.2", "job queue wait (submit to first claim)": "5.0"
    }
    sampling = dict(re.findall(r"<dt>(sampling\.[^<]*)</dt><dd>([^<]*)</dd>", page.text))
    assert sampling == {
        "sampling.classes": "0, 1", "sampling.per_class": "250", "sampling.seed": "0", "sampling.split": "—",
        "sampling.up_to": "yes",
    }


def stored_gate(database_url: str) -> uuid.UUID:
    outcome = {
        "rule": "id_accuracy: min 0.9", "metric": "id_accuracy", "kind": "min", "threshold": 0.9,
        "candidate": 0.95, "baseline": 0.94, "change": 0.01, "relative_change": 0.0106, "passed": True,
        "status": "passed", "interval": [0.93, 0.97], "reason": "above the minimum beyond the noise",
    }
    gate = Gate(
        candidate={"model": NESTED_MODEL, "name": None, "tags": {"team": "vision"}},
        baseline={"source": "run", "id": str(uuid.UUID(int=7))},
        dataset={"source": "builtin", "name": "mnist"},
        rules=[outcome["rule"]],
        outcomes=[outcome],
        passed=True,
        status="passed",
    )
    with session_scope(database_url) as session:
        session.add(gate)
        session.flush()
        return gate.id


def test_gate_pages_show_each_side_field_by_field(client: TestClient, clean_db: str) -> None:
    gate_id = stored_gate(clean_db)
    page = client.get(f"/gates/{gate_id}")
    assert page.status_code == 200, page.text[-400:]
    _no_raw_dict(page.text)
    sides = {
        side: dict(re.findall(r"<dt>([^<]*)</dt><dd>([^<]*)</dd>", block))
        for side, block in re.findall(r'<dl class="fields" id="gate-(\w+)">(.*?)</dl>', page.text, re.S)
    }
    assert sides["candidate"]["model.preprocess.channels"] == "1"
    assert sides["candidate"]["tags.team"] == "vision" and sides["candidate"]["name"] == "—"
    assert sides["baseline"] == {"source": "run", "id": str(uuid.UUID(int=7))}
    assert sides["dataset"] == {"source": "builtin", "name": "mnist"}
    listing = client.get("/gates").text
    _no_raw_dict(listing)
    assert "tags.team=vision" in listing
