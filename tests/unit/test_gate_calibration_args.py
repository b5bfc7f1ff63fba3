"""benchmarks/gate_calibration.py refuses what it cannot measure with a usage message and exit code 2,
before scoring anything (no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
def test_bad_arguments_are_usage_errors(args: list[str], message: str) -> None:
    root = SCRIPT.parents[1]
    out = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env={**os.environ, "PYTHONPATH": os.pathsep.join((str(root / "src"), str(root)))},
    )
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
