"""Sweeps end to end: uvicorn, Celery workers, Redis, PostgreSQL.

Three real digit classifiers are swept on MNIST to one progress and a ranking; then a sweep of three
small seeded CNNs shares the queue with one job submitted after it, which must start before the sweep's
last job (at most ``sweep_in_flight`` = 2 of a sweep's jobs are queued at a time, so the third waits for
a free place: a sweep that queued every job at once would put the single job behind all of them), each
job run once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
from torch import nn

from tests.conftest import MNIST_RAW, export_program
from tests.integration.jobs import job_body, upload, wait_held_mid_extraction
from tests.integration.stack import Stack, TriageStack
from zootriage.app.services.triage import triage_rule
from zootriage.core.protocol import DEFAULT_REPEATS
from zootriage.core.triage import MarkerRecord, rank

pytestmark = pytest.mark.slow  # real jobs through the stack

MNIST = {"source": "builtin", "name": "mnist"}


class TinyCnn(nn.Module):
    """A small digit CNN (16-d penultimate), random weights from a seed: a distinct model per seed."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.hidden = nn.Linear(4 * 14 * 14, 16)
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.head(torch.relu(self.hidden(x.flatten(1))))


def wait_sweep(http: httpx.Client, sweep_id: str, timeout: float = 300) -> tuple[dict[str, Any], list[float]]:
    """Poll a sweep until it is finished; its last state and every distinct fraction seen."""
    fractions: list[float] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = http.get(f"/v1/sweeps/{sweep_id}").json()
        if not fractions or fractions[-1] != state["progress"]["fraction"]:
            fractions.append(state["progress"]["fraction"])
        if state["status"] == "finished":
            return state, fractions
        time.sleep(0.1)
    raise AssertionError(f"sweep {sweep_id} did not finish: {fractions[-5:]}")


def _record(entry: dict[str, Any]) -> MarkerRecord:
    markers = entry["markers"]
    return MarkerRecord(
        entry["label"],
        {k: v["value"] for k, v in markers.items()},
        {k: v["std"] for k, v in markers.items()},
        repeats=DEFAULT_REPEATS,
        undecidable={k: v["reason"] for k, v in markers.items() if not v["decidable"]},
    )


def test_a_sweep_of_three_models_ends_with_one_progress_and_a_ranking(
    triage_stack: TriageStack, digit_programs: dict[str, Path], clean_db: str
) -> None:
    http = triage_stack.http
    models = [
        {"model": {"source": "checkpoint", "path": upload(http, path)}, "name": kind}
        for kind, path in digit_programs.items()
    ]
    body = {
        "models": models,
        "dataset": MNIST,
        "sampling": {"split": "test"},
        "protocol": {"n_t": 50, "points_per_class": 10},
        "tags": {"sweep": "digits"},
    }
    created = http.post("/v1/sweeps", json=body)
    assert created.status_code == 201, created.text
    sweep, fractions = wait_sweep(http, created.json()["id"])

    assert sweep["progress"] == {"total": 3, "counts": {"succeeded": 3}, "finished": 3, "fraction": 1.0}
    assert fractions == sorted(fractions) and fractions[-1] == 1.0  # one progress, never going back
    assert all(m["job"]["attempts"] == 1 and m["run_id"] for m in sweep["jobs"])
    ranking = sweep["ranking"]
    assert {e["label"] for e in ranking["entries"]} == set(digit_programs)
    assert {e["run_id"] for e in ranking["entries"]} == {m["run_id"] for m in sweep["jobs"]}
    default = triage_rule(None)  # no rule named: the product's default (core/defaults.py)
    expected = rank([_record(e) for e in ranking["entries"]], default)
    assert [e["label"] for e in ranking["entries"]] == [e.name for e in expected.entries]
    assert [e["rank"] for e in ranking["entries"]] == [e.rank for e in expected.entries]  # ties stay ties
    assert ranking["pick"] == expected.pick and ranking["rule"]["name"] == default.name
    run = http.get(f"/v1/runs/{sweep['jobs'][0]['run_id']}").json()
    assert run["tags"] == {"sweep": "digits"}


def test_a_job_submitted_after_a_sweep_is_not_queued_behind_all_of_it(
    stack: Stack, tmp_path: Path, clean_db: str
) -> None:
    http = httpx.Client(base_url=stack.base_url, timeout=60)
    paths = []
    for seed in range(4):
        torch.manual_seed(seed)
        paths.append(
            upload(http, export_program(TinyCnn(), tmp_path / f"tiny{seed}.pt2", MNIST_RAW, "digits"))
        )
    scoring = {k: v for k, v in job_body({}).items() if k != "model"}
    with stack.paused():  # every job waits mid-extraction until the single job is queued
        created = http.post(
            "/v1/sweeps", json={"models": [{"source": "checkpoint", "path": p} for p in paths[:3]], **scoring}
        )
        assert created.status_code == 201, created.text
        sweep_id = created.json()["id"]
        first = created.json()["jobs"][0]["job"]["id"]
        assert [m["status"] for m in created.json()["jobs"]].count("held") == 1
        wait_held_mid_extraction(http, f"/v1/jobs/{first}")
        single = http.post("/v1/jobs", json=job_body({"source": "checkpoint", "path": paths[3]}))
        assert single.status_code == 202, single.text
    sweep, _ = wait_sweep(http, sweep_id)
    alone = http.get(f"/v1/jobs/{single.json()['id']}").json()
    deadline = time.monotonic() + 120
    while alone["status"] not in {"succeeded", "failed", "cancelled"} and time.monotonic() < deadline:
        time.sleep(0.1)
        alone = http.get(f"/v1/jobs/{single.json()['id']}").json()

    jobs = [m["job"] for m in sweep["jobs"]]
    assert {job["status"] for job in [*jobs, alone]} == {"succeeded"}
    assert all(job["attempts"] == 1 for job in [*jobs, alone])  # each job ran once
    assert len({job["run_id"] for job in [*jobs, alone]}) == 4
    last = max(job["started_at"] for job in jobs)
    assert alone["started_at"] < last, (alone["started_at"], sorted(job["started_at"] for job in jobs))
