"""docs/ci.md's example, run as written against the real stack: the baseline made with its ``zootriage
submit`` line, then its GitHub Actions ``zootriage gate`` step with ``--baseline run:<id>`` (the
stored run's sampling, ``up_to`` included, taken as it is). The checkpoint is ccexam's MNIST CNN,
unchanged, so the gate must pass (exit 0)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ci_docs import CI_DOC, documented_command
from tests.integration.cli import no_traceback, zootriage
from tests.integration.stack import TriageStack

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("wide_consoles")]  # a real job through the stack


def test_the_github_actions_example_passes_an_unchanged_model(
    triage_stack: TriageStack, digit_programs: dict[str, Path], clean_db: str
) -> None:
    text = CI_DOC.read_text()
    checkpoint = str(digit_programs["ccexam"])
    submit = documented_command(text, "zootriage submit")
    assert submit[:2] == ["zootriage", "submit"] and "--per-class" not in submit  # the default sample
    submitted = zootriage(triage_stack, *[a.replace("released.pt2", checkpoint) for a in submit[1:]])
    assert submitted.exit_code == 0, submitted.stderr
    job = re.search(r"queued: job (\S+)", submitted.stdout)
    assert job is not None, submitted.stdout
    followed = zootriage(triage_stack, "status", job.group(1))
    assert followed.exit_code == 0, followed.stderr
    run = re.search(r"succeeded, run (\S+)", followed.stdout)
    assert run is not None, followed.stdout
    stored = triage_stack.http.get(f"/v1/runs/{run.group(1)}").json()
    assert stored["sampling"]["up_to"] is True  # what no command-line option can state

    gate = documented_command(text, "zootriage gate")
    assert "${{ vars.BASELINE_RUN_ID }}" in " ".join(gate)
    args = [
        a.replace("${{ vars.BASELINE_RUN_ID }}", run.group(1)).replace("model.pt2", checkpoint)
        for a in gate[1:]
    ]
    answer = zootriage(triage_stack, *args)
    no_traceback(answer)
    assert answer.exit_code == 0, answer.stdout + answer.stderr
    assert "PASSED" in answer.stdout
    decided = triage_stack.http.get("/v1/gates?limit=1").json()["items"][0]
    assert decided["baseline_run_id"] == run.group(1) and decided["status"] == "passed"
    assert [r["rule"] for r in decided["rules"]] == [
        "id_accuracy: max_drop 0.02",
        "dimension: max_relative_drop 0.1",
        "utilization: max_relative_drop 0.1",
    ]
