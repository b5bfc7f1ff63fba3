"""benchmarks/gate_calibration.py refuses what it cannot measure with a usage message and exit code 2,
before scoring anything (no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gate_calibration.py"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "0"], "--seeds and --n-t must be at least 1"),
        (["--noise", "0"], "--noise above 0"),
        (["--rule", "d_eff: min 1"], "unknown metric 'd_eff'"),
        (["--rule", "dimension max 1"], "does not parse"),
    ],
)
def test_bad_arguments_are_usage_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_script(SCRIPT, args, capsys)
    assert code == 2, err
    assert message in err
