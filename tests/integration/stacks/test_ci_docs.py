"""docs/ci.md's example, run as written against the real stack: the project made with its ``zootriage
projects create`` line, the baseline scored with its ``zootriage submit`` line and aliased with its
``zootriage alias set`` line, then its GitHub Actions ``zootriage gate`` step with ``--baseline
alias:production`` (the aliased run's sampling, ``up_to`` included, taken as it is). The checkpoint is
ccexam's MNIST CNN, unchanged, so the gate must pass (exit 0). Then a second release moves the alias,
and ``zootriage alias history`` shows both moves, while the gate keeps the run it was decided on. The
second release is the same checkpoint under a tenth of the documented GLUE draws (``--n-t 100``):
another run, as the alias needs, whose job starts at the marker stage on the first one's extraction
(2,500 images, the default sample), where another checkpoint would start a sandboxed child to extract."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ci_docs import CI_DOC, documented_command
from tests.integration.cli import no_traceback, zootriage
from tests.integration.stack import TriageStack

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("wide_consoles")]  # a real job through the stack


def _scored(stack: TriageStack, submit: list[str]) -> str:
    """The run a documented ``zootriage submit`` line makes, after following its job."""
    submitted = zootriage(stack, *submit[1:])
    assert submitted.exit_code == 0, submitted.stderr
    job = re.search(r"queued: job (\S+)", submitted.stdout)
    assert job is not None, submitted.stdout
    followed = zootriage(stack, "status", job.group(1))
    assert followed.exit_code == 0, followed.stderr
    run = re.search(r"succeeded, run (\S+)", followed.stdout)
    assert run is not None, followed.stdout
    return run.group(1)


def test_the_github_actions_example_passes_an_unchanged_model(
    triage_stack: TriageStack, digit_programs: dict[str, Path], clean_db: str
) -> None:
    text = CI_DOC.read_text()
    checkpoint = str(digit_programs["ccexam"])
    create = documented_command(text, "zootriage projects create")
    assert zootriage(triage_stack, *create[1:]).exit_code == 0
    project = create[-1]
    submit = documented_command(text, "zootriage submit")
    assert submit[:2] == ["zootriage", "submit"] and "--per-class" not in submit  # the default sample
    assert submit[submit.index("--project") + 1] == project
    released = _scored(triage_stack, [a.replace("released.pt2", checkpoint) for a in submit])
    stored = triage_stack.http.get(f"/v1/runs/{released}").json()
    assert stored["sampling"]["up_to"] is True  # what no command-line option can state

    alias_set = documented_command(text, "zootriage alias set")
    assert alias_set[3:5] == [project, "production"] and alias_set[5] == "RUN_ID"
    aliased = zootriage(triage_stack, *alias_set[1:5], released[:8])  # a short id, as documented
    assert aliased.exit_code == 0, aliased.stdout + aliased.stderr

    gate = documented_command(text, "zootriage gate")
    assert "alias:production" in gate and gate[gate.index("--project") + 1] == project
    answer = zootriage(triage_stack, *[a.replace("model.pt2", checkpoint) for a in gate[1:]])
    no_traceback(answer)
    assert answer.exit_code == 0, answer.stdout + answer.stderr
    assert "PASSED" in answer.stdout and f"alias production of project {project}" in answer.stdout
    decided = triage_stack.http.get(f"/v1/gates?limit=1&project={project}").json()["items"][0]
    assert decided["baseline_run_id"] == released and decided["status"] == "passed"
    assert (decided["baseline_alias"], decided["project"]) == ("production", project)
    assert [r["rule"] for r in decided["rules"]] == [
        "id_accuracy: max_drop 0.02",
        "dimension: max_relative_drop 0.1",
        "utilization: max_relative_drop 0.1",
    ]

    # The next release: scored in the project, the alias moved to it, its history showing both moves.
    second = _scored(triage_stack, [*[a.replace("released.pt2", checkpoint) for a in submit], "--n-t", "100"])
    assert second != released
    assert zootriage(triage_stack, *alias_set[1:5], second).exit_code == 0
    history = documented_command(text, "zootriage alias history")
    history = history[: history.index("#")] if "#" in history else history  # its comment
    shown = zootriage(triage_stack, *history[1:])
    assert shown.exit_code == 0, shown.stderr
    moves = [line for line in shown.stdout.splitlines() if "→" in line]
    assert len(moves) == 2
    assert moves[0].endswith(f"- → {released}") and moves[1].endswith(f"{released} → {second}")
    kept = triage_stack.http.get(f"/v1/gates/{decided['id']}").json()
    assert kept["baseline_run_id"] == released  # the gate keeps the run it was decided on
    runs = {r["id"] for r in triage_stack.http.get(f"/v1/runs?project={project}").json()["items"]}
    assert {released, second} <= runs
