"""The ``zootriage`` client commands as a CI job runs them, against the real stack.

A gate uploads a local checkpoint, waits for scoring, and exits 0 when it passes, 1 when it fails
(naming the failing rule), 3 when it is inconclusive (within the noise, or no noise estimate), 2 on a
usage or service error, with a message and never a traceback. The commands run in this process
(Typer's runner: the same code as the console script, without a torch import per call).

The module starts from empty tables and keeps them (``module_tables``): each test makes the runs it
asserts on under a protocol of its own (``scoring``), so its jobs are new and its commands must wait for
them, but every run of a checkpoint here is of one sample, which the worker extracts once for the module
(a job on a model, data and sample already extracted starts at the marker stage: seconds, where an
extraction starts a sandboxed child that imports torch and loads the program).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cli import SCORING, no_traceback, zootriage
from tests.integration.databases import wipe_tables
from tests.integration.models import place_torchvision_weights
from tests.integration.stack import TriageStack
from zootriage.core.defaults import product_default
from zootriage.core.evidence import load_evidence, rule_key

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("wide_consoles")]  # real jobs through the stack

@pytest.fixture(scope="module")
def module_tables(database_url: str) -> Iterator[str]:
    """Empty tables for the module, emptied again after it; not between its tests (``clean_db``), which
    would throw away the extraction records that let a later test's jobs skip the extraction."""
    wipe_tables(database_url)
    yield database_url
    wipe_tables(database_url)


@pytest.fixture(scope="module")
def checkpoints(digit_programs: dict[str, Path], module_tables: str) -> tuple[str, str]:
    """The adversarially and the normally trained LeNet5 as local files."""
    return f"ckpt:{digit_programs['advtrained']}", f"ckpt:{digit_programs['clntrained']}"


def scoring(n_t: int) -> list[str]:
    """``SCORING`` with ``n_t`` GLUE draws: a protocol no other test here uses, so the test's runs are
    its own (new jobs, whichever tests ran before it), on the module's one sample per checkpoint."""
    at = SCORING.index("--n-t") + 1
    return [*SCORING[:at], str(n_t), *SCORING[at + 1 :]]


def run_of(status: str) -> str:
    """The run id a ``zootriage status`` line gives a succeeded job."""
    found = re.search(r"succeeded, run (\S+)", status)
    assert found is not None, status
    return found.group(1)


def test_gate_passes_and_fails_with_exit_codes(
    triage_stack: TriageStack,
    checkpoints: tuple[str, str],
) -> None:
    candidate, baseline = checkpoints
    gate = ["gate", "--candidate", candidate, "--baseline", baseline, *SCORING]
    passing = zootriage(
        triage_stack, *gate, "--rule", "dimension: max 1000", "--rule", "id_accuracy: min 0.5"
    )
    assert passing.exit_code == 0, passing.stderr
    assert "PASSED" in passing.stdout and "dimension: max 1000" in passing.stdout
    # Uploaded files are called by the names they were uploaded under, never by their hashes.
    assert "lenet5_advtrained.pt2 against lenet5_clntrained.pt2" in passing.stdout
    assert f"evidence: study {load_evidence()['study']}" in passing.stdout

    failing = zootriage(
        triage_stack, *gate, "--rule", "id_accuracy: min 1.01", "--rule", "dimension: max 1000"
    )
    assert failing.exit_code == 1, failing.stderr
    assert "failed id_accuracy: min 1.01" in failing.stderr
    assert "dimension: max 1000:" not in failing.stderr  # only rules that did not pass are listed
    no_traceback(failing)

    listed = triage_stack.http.get("/v1/gates?limit=2").json()["items"]
    assert [g["passed"] for g in listed] == [False, True]
    baseline_run = listed[0]["baseline_run_id"]
    by_run = zootriage(
        triage_stack,
        *gate[:3],
        "--baseline",
        f"run:{baseline_run}",
        *SCORING,
        "--rule",
        "utilization: max_relative_drop 1",
        "--json",
    )
    assert by_run.exit_code == 0, by_run.stderr
    decided = json.loads(by_run.stdout)
    assert decided["passed"] is True and decided["baseline_run_id"] == baseline_run


def test_gate_without_a_noise_estimate_is_inconclusive_exit_3(
    triage_stack: TriageStack,
    checkpoints: tuple[str, str],
) -> None:
    candidate, baseline = checkpoints
    gate = ["gate", "--candidate", candidate, "--baseline", baseline, *SCORING, "--repeats", "1"]
    answer = zootriage(triage_stack, *gate, "--rule", "dimension: max 1000")
    assert answer.exit_code == 3, answer.stderr
    assert "INCONCLUSIVE" in answer.stdout
    assert "inconclusive dimension: max 1000" in answer.stderr and "no noise estimate" in answer.stderr
    no_traceback(answer)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rule", "dimension max 1"], "invalid_rule"),
        (["--rule", "d_eff: min 1"], "unknown_metric: unknown metric 'd_eff'"),
        ([], "Missing option '--rule'"),
    ],
)
def test_gate_usage_errors_exit_2(
    triage_stack: TriageStack,
    checkpoints: tuple[str, str],
    args: list[str],
    message: str,
) -> None:
    result = zootriage(
        triage_stack, "gate", "--candidate", checkpoints[0], "--baseline", checkpoints[1], *SCORING, *args
    )
    assert result.exit_code == 2
    assert message in result.stderr
    no_traceback(result)


def test_service_errors_exit_2(triage_stack: TriageStack, module_tables: str) -> None:
    unreachable = zootriage(triage_stack, "history", url="http://127.0.0.1:9")
    assert unreachable.exit_code == 2 and "cannot reach the service" in unreachable.stderr
    unknown = zootriage(triage_stack, "recommend", "no_such_net", "--dataset", "builtin:mnist")
    assert unknown.exit_code == 2 and "unknown_model" in unknown.stderr
    bad_ref = zootriage(triage_stack, "rank", "nonsense", "--dataset", "builtin:mnist")
    assert bad_ref.exit_code == 2 and "bad_reference" in bad_ref.stderr
    for result in (unreachable, unknown, bad_ref):
        no_traceback(result)


def test_submit_status_and_history(
    triage_stack: TriageStack,
    checkpoints: tuple[str, str],
) -> None:
    history = ["history", "--json", "--limit", "100"]
    before = {run["id"] for run in json.loads(zootriage(triage_stack, *history).stdout)["items"]}
    own = scoring(51)
    first = zootriage(triage_stack, "submit", checkpoints[0], *own)
    assert first.exit_code == 0 and "queued: job" in first.stdout, first.stderr
    first_job = first.stdout.split("queued: job")[1].split()[0]
    first_run = run_of(zootriage(triage_stack, "status", first_job).stdout)
    again = zootriage(triage_stack, "submit", checkpoints[0], *own)
    assert again.exit_code == 0, again.stderr
    assert f"already computed: run {first_run}" in again.stdout
    named = ["--name", "adv lenet", "--tag", "team=robust", "--tag", "stage=cli"]
    queued = zootriage(triage_stack, "submit", checkpoints[0], *own[:-1], "11", *named)
    assert queued.exit_code == 0 and "queued: job" in queued.stdout, queued.stderr
    job_id = queued.stdout.split("queued: job")[1].split()[0]
    status = zootriage(triage_stack, "status", job_id)
    assert status.exit_code == 0, status.stderr
    assert f"job {job_id} (adv lenet): succeeded, run" in status.stdout
    assert "run adv lenet: torch.export [stage=cli team=robust]" in status.stdout
    tagged = zootriage(triage_stack, "history", "--tag", "team=robust", "--tag", "stage=cli")
    assert tagged.exit_code == 0 and "adv lenet" in tagged.stdout and "team=robust" in tagged.stdout
    assert zootriage(triage_stack, "history", "--tag", "team=other").stdout.count("adv lenet") == 0
    bad_tag = zootriage(triage_stack, "history", "--tag", "Team")
    assert bad_tag.exit_code == 2 and "not key=value" in bad_tag.stderr
    no_traceback(bad_tag)

    as_json = json.loads(zootriage(triage_stack, *history).stdout)
    listed = [run["id"] for run in as_json["items"]]
    # Every run once, and new since the test began exactly its two (the second submit made none): what
    # "two runs" said when each test started from empty tables.
    assert len(listed) == len(set(listed)) and set(listed) - before == {first_run, run_of(status.stdout)}
    as_csv = zootriage(triage_stack, "history", "--csv").stdout.splitlines()
    assert as_csv[0].startswith("id,created_at") and len(as_csv) == len(as_json["items"]) + 1
    table = zootriage(triage_stack, "history", "--sort", "dimension")
    assert table.exit_code == 0 and as_json["items"][0]["id"][:8] in table.stdout


def test_rank_and_recommend_wait_for_their_jobs(
    triage_stack: TriageStack,
    checkpoints: tuple[str, str],
) -> None:
    ranked = zootriage(triage_stack, "rank", *checkpoints, *scoring(52), "--json")
    assert ranked.exit_code == 0, ranked.stderr
    entries = json.loads(ranked.stdout)["entries"]
    assert len(entries) == 2 and all(entry["rank"] is not None for entry in entries)
    assert {entry["label"] for entry in entries} == {"lenet5_advtrained.pt2", "lenet5_clntrained.pt2"}
    table = zootriage(triage_stack, "rank", *checkpoints, *scoring(52))
    assert table.exit_code == 0 and "lenet5_clntrained.pt2" in table.stdout
    assert not re.search(r"[0-9a-f]{64}", table.stdout)

    for seed, weights in enumerate(("IMAGENET1K_V1", "IMAGENET1K_V2")):
        place_torchvision_weights(triage_stack.torch_home, "mobilenet_v2", weights, seed)
    tiny = [
        "--dataset",
        "builtin:mnist",
        "--split",
        "test",
        "--classes",
        "2",
        "--per-class",
        "4",
        "--n-t",
        "20",
        "--points-per-class",
        "4",
    ]
    recommended = zootriage(triage_stack, "recommend", "mobilenet_v2", *tiny)
    assert recommended.exit_code == 0, recommended.stderr
    assert "IMAGENET1K_V1" in recommended.stdout and "verdict: " in recommended.stdout
    assert "ImageNet accuracy picks undecided" in recommended.stdout  # 72.154 vs 71.878: within the noise
    chosen, shipped = product_default(), load_evidence()  # no --rule: the product's default rule
    key = rule_key(chosen.v1_v2_rule, "one_vs_rest", chosen.centering)
    line = f"evidence: study {shipped['study']}, {shipped['primary_outcome']}: rule {key}"
    assert line in recommended.stdout
    # Every candidate rule with its evidence, then the answer with its confidence (issue 24).
    assert "answer: " in recommended.stdout and "confidence" in recommended.stdout
    assert "no evidence" in table.stdout or "exploratory" in table.stdout or "validated" in table.stdout
