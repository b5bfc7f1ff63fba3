"""``zootriage trend`` against the real API (uvicorn, no worker; runs stored as the worker stores them):
the table with each value's std and band, the drift verdict line, ``--json``, ``--fail-on-drift``'s exit
statuses for CI, and a refusal as one line with exit 2."""

from __future__ import annotations

import json

import pytest
from click.testing import Result
from typer.testing import CliRunner

from tests.integration.cli import console_width, no_traceback
from tests.integration.stack import Stack
from tests.integration.trend_runs import trend_run
from zootriage.app.cli import app as cli


@pytest.fixture
def api_only(api_only_stack: Stack) -> Stack:
    """The session's API without a worker (conftest ``api_only_stack``): these tests store their runs
    in the database themselves and queue no job, so an API of their own (an import of torch) adds
    nothing."""
    return api_only_stack


def trend(stack: Stack, *args: str) -> Result:
    env = {"ZOOTRIAGE_URL": stack.base_url, "ZOOTRIAGE_API_KEY": None, "COLUMNS": "160"}
    with console_width(160):
        return CliRunner().invoke(cli, ["trend", *args], env=env)


def test_the_table_carries_the_noise_and_the_drift_verdict(api_only: Stack, clean_db: str) -> None:
    drifting = [
        trend_run(clean_db, f"rel-{day}", {"dimension": value}, day=day, stds={"dimension": 0.02},
                  projects=["vision"])
        for day, value in enumerate([1.0, 1.01, 1.3])
    ]
    for day, value in enumerate([2.0, 2.01]):
        noisy = {"dimension": 0.5}
        trend_run(clean_db, f"aud-{day}", {"dimension": value}, day=day, stds=noisy, projects=["audio"])

    shown = trend(api_only, "--marker", "d_eff", "--project", "vision")
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert "3 runs in order of creation" in out and "asked as d_eff" in out
    for run_id in drifting:
        assert str(run_id)[:8] in out
    assert "± std" in out and "0.02" in out and "band ± se" in out
    assert "0.991056 – 1.00894" in out  # 1.0 ± 0.02/√5
    assert "drift of dimension: DRIFT (better): last − first = 0.3" in out and "p = " in out

    as_json = json.loads(trend(api_only, "--marker", "d_eff", "--project", "vision", "--json").stdout)
    assert as_json["series"][0]["drift"]["verdict"] == "drift"
    assert [p["run_id"] for p in as_json["series"][0]["points"]] == [str(i) for i in drifting]

    assert trend(api_only, "--marker", "d_eff", "--project", "vision", "--fail-on-drift").exit_code == 1
    calm = trend(api_only, "--marker", "dimension", "--project", "audio", "--fail-on-drift")
    assert calm.exit_code == 0 and "within the noise" in calm.stdout
    # Ψ_eff was never stored for these runs: no points, so no verdict; CI hears "inconclusive".
    unknown = trend(api_only, "--marker", "psi_eff", "--project", "audio", "--fail-on-drift")
    assert unknown.exit_code == 3 and "cannot decide" in unknown.stdout


def test_a_refusal_is_one_line_and_exit_2(api_only: Stack, clean_db: str) -> None:
    for args, expected in (
        (["--marker", "d_efff"], "unknown_marker"),
        (["--marker", "d_eff", "--project", "nope"], "project_not_found"),
        (["--marker", "d_eff", "--since", "yesterday"], "invalid_request"),
    ):
        refused = trend(api_only, *args)
        assert refused.exit_code == 2 and expected in refused.stderr, refused.output
        no_traceback(refused)
