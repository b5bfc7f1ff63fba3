"""benchmarks/suite_timeline.py reads the two processes' logs into the figures it prints; the machine's
speed that it and suite_cost.py print with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripts import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "suite_timeline.py"


@pytest.fixture(scope="module")
def timeline_module() -> dict[str, Any]:
    return load_script(SCRIPT)  # it imports suite_cost, as `python SCRIPT` finds it


def test_the_gap_the_busy_cores_and_each_process_last_module(timeline_module: dict[str, Any]) -> None:
    """Two processes: gw0 ends at 110 s on b.py, gw1 at 100 s on c.py; the machine's CPU counter goes
    from 1,000 s at the first test's start (10 s) to 1,180 s at the last end (110 s): 1.8 cores."""
    logs = {
        "gw0": [
            "start 0.0 990.0",
            "collected 8.0 1000.0",
            "test 10.0 60.0 1000.0 1090.0 tests/a.py::t",
            "test 60.0 110.0 1090.0 1180.0 tests/b.py::t[x y]",
        ],
        "gw1": ["start 0.5 990.0", "collected 9.0 1000.0", "test 11.0 100.0 1001.0 1170.0 tests/c.py::t"],
    }
    timeline = timeline_module["read_timeline"](logs)
    assert [(p.name, p.collected, p.last_end, p.last_module) for p in timeline.processes] == [
        ("gw0", 8.0, 110.0, "tests/b.py"),
        ("gw1", 9.0, 100.0, "tests/c.py"),
    ]
    assert timeline.end_gap_s == pytest.approx(10.0)
    assert timeline.tests_wall_s == pytest.approx(100.0)
    assert timeline.cores_busy == pytest.approx(1.8)


def test_logs_without_a_test_are_an_error(timeline_module: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="no test"):
        timeline_module["read_timeline"]({"gw0": ["start 0.0 1.0"]})


def test_the_speed_gauge_counts_the_childs_cpu_not_its_wall() -> None:
    """``suite_cost.child_cpu_s`` (what ``machine_speed_s`` measures, for both benchmarks): a child that
    spins for about 0.3 s of CPU against one that sleeps 0.3 s."""
    child_cpu_s = load_script(SCRIPT.with_name("suite_cost.py"))["child_cpu_s"]
    spin = child_cpu_s("import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass")
    sleep = child_cpu_s("import time; time.sleep(0.3)")
    assert 0.29 <= spin <= 3.0, spin
    assert sleep < spin - 0.2, (sleep, spin)


def test_the_speed_line_gives_steal_as_a_share_of_all_the_cpus_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """20 s of steal in a 100 s run on two CPUs is a tenth of the CPUs' time; ``steal_s`` is /proc/stat's
    eighth counter in seconds, which never runs backwards."""
    suite_cost = load_script(SCRIPT.with_name("suite_cost.py"))
    monkeypatch.setattr(suite_cost["os"], "cpu_count", lambda: 2)
    line = suite_cost["speed_line"](2.9, 3.1, 20.0, 100.0)
    assert line.endswith("2.90 s of CPU before the run, 3.10 s after; steal 20 s (10.0 % of the CPUs' time)")
    with open("/proc/stat") as stat:
        ticks = int(stat.readline().split()[8])
    first = suite_cost["steal_s"]()
    assert ticks / suite_cost["TICKS"] <= first <= suite_cost["steal_s"]()
