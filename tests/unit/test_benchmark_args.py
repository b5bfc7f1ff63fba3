"""The GLUE benchmarks refuse counts they cannot measure with a usage message and exit code 2, not a
traceback (a median of no rounds, a ratio over no draws)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import run_script

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        ("glue_speed.py", ["--rounds", "0"], "--rounds and --n-t must be at least 1"),
        ("glue_speed.py", ["--n-t", "0"], "--rounds and --n-t must be at least 1"),
        ("glue_cost.py", ["--n-t", "0"], "--n-t and --dim must be at least 1"),
        ("glue_cost.py", ["--classes", "10", "1"], "every --classes at least 2"),
        ("child_start.py", ["--rounds", "0"], "--rounds must be at least 1"),
        ("rescore.py", ["--rounds", "0"], "--rounds must be at least 1"),
        ("suite_cost.py", ["--top", "0"], "--top must be at least 1"),
    ],
)
def test_a_count_below_one_is_a_usage_error(script, args, message, capsys):
    code, err = run_script(BENCHMARKS / script, args, capsys)
    assert code == 2
    assert message in err
