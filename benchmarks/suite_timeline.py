"""The two-process suite's timeline: when each process collected and ended, and how busy the machine was.

Runs pytest as ``make test`` does on two cores (``--cov -n 2 --dist loadfile --no-loadscope-reorder``;
pytest arguments after ``--`` replace the default of the whole suite), with this module loaded as a
plugin in each xdist process: around every test it writes the wall clock and the whole machine's CPU
time (``/proc/stat``, as ``suite_cost.py`` reads it). Prints each process's collection and last test's
end, how far apart the two ended (the time one process sat idle at the end), and the cores the machine
kept busy while tests ran: near 2 the run is bound by its CPU, and only less work shortens it; and the
machine's speed before and after the run (``suite_cost.machine_speed_s``) with the CPU time the host
gave other guests meanwhile (``suite_cost.steal_s``), without which runs made at different hours do not
compare.

    .venv/bin/python benchmarks/suite_timeline.py [-- PYTEST ARGS]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from suite_cost import machine_cpu_s, machine_speed_s, speed_line, steal_s

HERE = Path(__file__).resolve().parent
FOLDER_ENV = "SUITE_TIMELINE_DIR"


def _record(line: str) -> None:
    folder, worker = os.environ.get(FOLDER_ENV), os.environ.get("PYTEST_XDIST_WORKER")
    if folder and worker:
        with open(Path(folder) / f"{worker}.log", "a") as log:
            log.write(line + "\n")


def pytest_sessionstart(session: pytest.Session) -> None:
    _record(f"start {time.time():.3f} {machine_cpu_s():.2f}")


def pytest_collection_finish(session: pytest.Session) -> None:
    _record(f"collected {time.time():.3f} {machine_cpu_s():.2f}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    began, cpu = time.time(), machine_cpu_s()
    result = yield
    _record(f"test {began:.3f} {time.time():.3f} {cpu:.2f} {machine_cpu_s():.2f} {item.nodeid}")
    return result


@dataclass(frozen=True)
class Process:
    name: str
    started: float
    collected: float
    first_test: float
    last_end: float
    last_module: str


@dataclass(frozen=True)
class Timeline:
    processes: list[Process]
    tests_wall_s: float  # from the first test's start to the last test's end, any process
    tests_cpu_s: float  # the machine's CPU over that span

    @property
    def cores_busy(self) -> float:
        return self.tests_cpu_s / self.tests_wall_s if self.tests_wall_s > 0 else 0.0

    @property
    def end_gap_s(self) -> float:
        ends = [process.last_end for process in self.processes]
        return max(ends) - min(ends)


def read_timeline(logs: dict[str, list[str]]) -> Timeline:
    """The timeline of each process's log lines (``start``, ``collected``, ``test`` records)."""
    processes, starts, ends = [], [], []
    for name, lines in sorted(logs.items()):
        fields = [line.split(maxsplit=5) for line in lines if line.strip()]
        marks = {row[0]: float(row[1]) for row in fields if row[0] in ("start", "collected")}
        tests = [row for row in fields if row[0] == "test"]
        if not tests:
            continue
        final = max(tests, key=lambda row: float(row[2]))
        processes.append(
            Process(
                name,
                marks.get("start", float(tests[0][1])),
                marks.get("collected", float(tests[0][1])),
                float(tests[0][1]),
                float(final[2]),
                final[5].split("::")[0],
            )
        )
        starts += [(float(row[1]), float(row[3])) for row in tests]
        ends += [(float(row[2]), float(row[4])) for row in tests]
    if not processes:
        raise ValueError("no test was recorded")
    (first, cpu_first), (last, cpu_last) = min(starts), max(ends)
    return Timeline(processes, last - first, cpu_last - cpu_first)


def report(timeline: Timeline) -> None:
    zero = min(process.started for process in timeline.processes)
    for process in timeline.processes:
        print(
            f"{process.name}: collected at {process.collected - zero:6.1f} s, last test ended at "
            f"{process.last_end - zero:6.1f} s ({process.last_module})"
        )
    print(f"the processes' last tests ended {timeline.end_gap_s:.1f} s apart")
    print(
        f"while tests ran: {timeline.tests_wall_s:.0f} s, machine CPU {timeline.tests_cpu_s:.0f} s, "
        f"{timeline.cores_busy:.2f} of {os.cpu_count()} cores busy"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments (default: the suite)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="suite-timeline-") as folder:
        env = {
            **os.environ,
            FOLDER_ENV: folder,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        }
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--cov",
            "--cov-report=",
            "-n",
            "2",
            "--dist",
            "loadfile",
            "--no-loadscope-reorder",
            "-p",
            "suite_timeline",
            *args.pytest_args,
        ]
        speed, steal = machine_speed_s(), steal_s()
        began = time.monotonic()
        code = subprocess.run(command, cwd=HERE.parent, env=env, check=False).returncode
        wall, steal = time.monotonic() - began, steal_s() - steal
        print(f"\npytest exited {code} after {wall:.1f} s")
        logs = {path.stem: path.read_text().splitlines() for path in Path(folder).glob("*.log")}
    report(read_timeline(logs))
    print(speed_line(speed, machine_speed_s(), steal, wall))
    sys.exit(code)


if __name__ == "__main__":
    main()
