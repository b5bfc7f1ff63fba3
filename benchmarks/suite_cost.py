"""What the test suite costs the machine, and the floor that cost sets on its wall time.

Runs pytest as ``make test`` does (``--cov``, the options of pyproject.toml; pytest arguments after
``--`` replace the default of the whole suite) with a plugin that reads, around every test, the wall
clock and the CPU time of the whole machine (``/proc/stat``: the test process, its stacks' API and
worker processes and their sandboxed children alike). Prints the totals, the floor that the CPU time
sets on a run over the machine's cores (CPU seconds / cores: every core busy all the run), the ratio
wall / floor, and the modules that cost the most CPU, with the machine's speed before and after the run
(``machine_speed_s``) and the CPU time the host gave other guests during it (``steal_s``). On an idle
machine the CPU counted is the suite's; other users' work would be counted too.

    .venv/bin/python benchmarks/suite_cost.py [--top 25] [--save costs.json] [-- PYTEST ARGS]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_ticks() -> list[int]:
    """``/proc/stat``'s first eight counters for all CPUs: user, nice, system, idle, iowait, irq,
    softirq, steal."""
    with open("/proc/stat") as stat:
        return [int(value) for value in stat.readline().split()[1:9]]


def machine_cpu_s() -> float:
    """CPU seconds the machine has spent busy since boot: user, nice, system, irq, softirq, steal."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = _cpu_ticks()
    return (user + nice + system + irq + softirq + steal) / TICKS


def steal_s() -> float:
    """CPU seconds since boot that this virtual machine's CPUs were ready to run but the host ran
    another guest (steal): a machine that is not idle however quiet its own processes are."""
    return _cpu_ticks()[7] / TICKS


def child_cpu_s(code: str) -> float:
    """CPU seconds (user and system) that a fresh ``python -c CODE`` of this interpreter takes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def machine_speed_s(rounds: int = 3) -> float:
    """The machine's speed now, as the median CPU seconds of ``import torch, torchvision`` in a fresh
    interpreter: 2.8-3.0 s on the 2-core build machine at its fast hours and up to 5.5 s at its slow
    ones (2026-12-05). The suite's CPU and wall stretch with it (its processes are mostly such starts),
    so runs made hours apart compare only alongside it."""
    return statistics.median(child_cpu_s("import torch, torchvision") for _ in range(rounds))


def speed_line(before: float, after: float, steal: float, wall: float) -> str:
    """The gauge before and after a run of ``wall`` seconds, and the ``steal`` seconds the host took in
    it, as a share of the time of all the machine's CPUs."""
    share = 100 * steal / (wall * (os.cpu_count() or 1))
    return (f"machine speed: import torch, torchvision took {before:.2f} s of CPU before the run, "
            f"{after:.2f} s after; steal {steal:.0f} s ({share:.1f} % of the CPUs' time)")


class Watch:
    """Wall and machine CPU seconds of each test, setup and teardown included."""

    def __init__(self) -> None:
        self.tests: list[tuple[str, float, float, float]] = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        began, wall, cpu = time.time(), time.monotonic(), machine_cpu_s()
        yield
        self.tests.append((item.nodeid, time.monotonic() - wall, machine_cpu_s() - cpu, began))


def report(watch: Watch, wall: float, cpu: float, top: int) -> None:
    cores = os.cpu_count() or 1
    floor = cpu / cores
    print(f"\nwhole run: wall {wall:.0f} s, machine CPU {cpu:.0f} s ({cpu / wall:.2f} of {cores} cores busy "
          f"on average), load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"floor on {cores} cores (CPU / cores): {floor:.0f} s; wall / floor: {wall / floor:.2f}x")
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, test_wall, test_cpu, _began in watch.tests:
        row = modules[nodeid.split("::")[0]]
        row[0] += test_cpu
        row[1] += test_wall
        row[2] += 1
    print(f"the {top} modules with the most machine CPU (their tests' share of the {cpu:.0f} s):")
    share = 0.0
    for module, (module_cpu, module_wall, count) in sorted(modules.items(), key=lambda m: -m[1][0])[:top]:
        share += module_cpu
        print(f"  {module_cpu:7.1f} s CPU {module_wall:7.1f} s wall {int(count):4d} tests "
              f"{100 * share / cpu:5.1f} % so far  {module}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25, help="modules listed, most CPU first")
    parser.add_argument("--save", type=Path, help="also write each test's start, wall and CPU s (JSON)")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments (default: the suite)")
    args = parser.parse_args()
    if args.top < 1:
        parser.error("--top must be at least 1")
    os.chdir(ROOT)
    watch = Watch()
    speed = machine_speed_s()
    wall, cpu, steal = time.monotonic(), machine_cpu_s(), steal_s()
    code = pytest.main(["--cov", "--cov-report=", *args.pytest_args], plugins=[watch])
    wall, cpu, steal = time.monotonic() - wall, machine_cpu_s() - cpu, steal_s() - steal
    report(watch, wall, cpu, args.top)
    print(speed_line(speed, machine_speed_s(), steal, wall))
    if args.save:
        tests = [
            {"test": nodeid, "began": began, "wall_s": w, "cpu_s": c} for nodeid, w, c, began in watch.tests
        ]
        args.save.write_text(json.dumps({"wall_s": wall, "cpu_s": cpu, "tests": tests}, indent=1))
    sys.exit(int(code))


if __name__ == "__main__":
    main()
