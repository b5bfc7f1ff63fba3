"""``zootriage show``, ``gates``, ``cancel`` and ``history``'s paging and marker filter, as real processes
against the real stack; each test makes the runs, gates and jobs it looks at.

Every run here is of one checkpoint and one sample (``SCORING``'s), varied in its protocol only where a
test needs a run of its own: the worker extracts the sample once, and every later job on it starts at
the marker stage (seconds, where an extraction starts a sandboxed child that imports torch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.cli import SCORING, no_traceback, zootriage
from tests.integration.stack import TriageStack


@pytest.fixture(scope="module")
def program(digit_programs: dict[str, Path]) -> str:
    return f"ckpt:{digit_programs['advtrained']}"


def scored_run(stack: TriageStack, program: str, *args: str) -> str:
    """The id of the run of ``program`` with these options, scored now if it was not yet."""
    answer = zootriage(stack, "submit", program, *SCORING, *args, "--json")
    assert answer.exit_code == 0, answer.stderr
    body = json.loads(answer.stdout)
    if "run_id" not in body and "markers" in body:  # already computed: the run itself
        return str(body["id"])
    status = zootriage(stack, "status", body["id"], "--json")
    assert status.exit_code == 0, status.stderr
    return str(json.loads(status.stdout)["run_id"])


def test_show_prints_every_marker_with_its_noise(triage_stack: TriageStack, program: str) -> None:
    run_id = scored_run(triage_stack, program, "--name", "shown net", "--n-t", "61")  # a run of its own
    shown = zootriage(triage_stack, "show", run_id)
    assert shown.exit_code == 0, shown.stderr
    assert run_id in shown.stdout and "shown net" in shown.stdout
    assert "± std" in shown.stdout and "dimension" in shown.stdout and "noise" in shown.stdout
    assert "no noise estimate" not in shown.stderr  # the default repeats give one
    as_json = json.loads(zootriage(triage_stack, "show", run_id, "--json").stdout)
    dimension = next(m for m in as_json["markers"] if m["name"] == "dimension")
    assert dimension["std"] is not None and dimension["std"] >= 0  # the default repeats give a std

    prefix = zootriage(triage_stack, "show", run_id[:8])  # the service resolves a unique prefix
    assert prefix.exit_code == 0 and run_id in prefix.stdout, prefix.stderr
    short = zootriage(triage_stack, "show", run_id[:7])
    assert short.exit_code == 2 and "too short" in short.stderr
    missing = zootriage(triage_stack, "show", "00000000-0000-0000-0000-000000000000")
    assert missing.exit_code == 2 and "run_not_found" in missing.stderr
    for result in (short, missing):
        no_traceback(result)


def test_history_pages_orders_and_filters_on_a_marker(
    triage_stack: TriageStack,
    program: str,
) -> None:
    for points in ("8", "9"):
        scored_run(triage_stack, program, "--tag", "suite=paging", "--points-per-class", points)
    common = ["--tag", "suite=paging", "--sort", "dimension", "--json"]
    ascending = json.loads(zootriage(triage_stack, "history", *common, "--order", "asc").stdout)["items"]
    values = [run["markers"]["dimension"] for run in ascending]
    assert len(values) >= 2 and values == sorted(values)

    first = zootriage(triage_stack, "history", *common[:-1], "--limit", "1")
    assert first.exit_code == 0 and "more: repeat with --cursor" in first.stderr, first.stderr
    cursor = first.stderr.split("--cursor", 1)[1].split()[0]
    page = json.loads(zootriage(triage_stack, "history", *common, "--limit", "1").stdout)
    after = zootriage(triage_stack, "history", *common, "--limit", "1", "--cursor", cursor)
    second = json.loads(after.stdout)
    assert page["items"][0]["id"] != second["items"][0]["id"]

    lowest = min(values)
    bound = str(lowest + 1e-9)
    above = zootriage(triage_stack, "history", *common[:2], "--marker", "dimension", "--min", bound, "--json")
    kept = [run["markers"]["dimension"] for run in json.loads(above.stdout)["items"]]
    assert lowest not in kept and len(kept) == len(values) - values.count(lowest)


def test_a_narrow_terminal_leaves_columns_out_and_says_which(
    triage_stack: TriageStack,
    program: str,
) -> None:
    scored_run(triage_stack, program)
    narrow = zootriage(triage_stack, "history", "--limit", "3", columns=60)
    assert narrow.exit_code == 0, narrow.stderr
    assert "not shown at this width:" in narrow.stdout
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 60


def test_gates_lists_decisions_and_cancel_refuses_a_finished_job(
    triage_stack: TriageStack,
    program: str,
) -> None:
    # The model against itself: a gate whose rule no model can pass, its baseline beside the point.
    gate = zootriage(triage_stack, "gate", "--candidate", program, "--baseline", program, *SCORING,
                     "--rule", "id_accuracy: min 1.01", "--json")
    assert gate.exit_code == 1, gate.stderr
    gate_id = json.loads(gate.stdout)["id"]
    listed = json.loads(zootriage(triage_stack, "gates", "--not-passed", "--json", "--limit", "50").stdout)
    assert gate_id in [g["id"] for g in listed["items"]]
    passed_only = json.loads(zootriage(triage_stack, "gates", "--passed", "--json", "--limit", "50").stdout)
    assert gate_id not in [g["id"] for g in passed_only["items"]]
    table = zootriage(triage_stack, "gates", "--limit", "50")
    assert gate_id in table.stdout and "id_accuracy: min 1.01" in table.stdout

    queued = json.loads(zootriage(triage_stack, "submit", program, *SCORING, "--n-t", "62", "--json").stdout)
    # a new job (n_t 62 is scored by no other test), not a stored run: the answer is read after the
    # commit that publishes it, so a quick worker may have claimed it already
    assert queued["status"] in {"queued", "running"}, queued
    job_id = queued["id"]
    zootriage(triage_stack, "status", job_id)  # wait for it to finish
    refused = zootriage(triage_stack, "cancel", job_id)
    assert refused.exit_code == 2 and "409" in refused.stderr
    no_traceback(refused)
