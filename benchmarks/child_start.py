"""A sandboxed extraction child's start, until it says it is ready: started for a job that waits for it
(``new_child(job_waiting=True)``: the imports alone) against one started ahead of its job (a warm pool's:
the imports, every builtin data set opened, the export modules, the kernels' set-up), the latter both
mapping MNIST from its decoded files (``core.data.mapped``, as the service does) and decoding it itself
(the decoded files' folder unusable). Interleaved rounds in one run; prints the medians of the wall
time and of the whole machine's CPU time over the start (``/proc/stat``, as ``suite_cost.py`` reads it: the
sandbox's processes are not this one's to count; on an idle machine they are nearly all of it), their
ratios, and the load average.

    .venv/bin/python benchmarks/child_start.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from suite_cost import machine_cpu_s

from zootriage.core.data.mapped import FOLDER_ENV
from zootriage.core.extraction import new_child

KINDS = {
    "waiting": "for a waiting job (imports alone)",
    "warm": "ahead of its job (full warm-up)",
    "decoding": "ahead of its job, decoding MNIST",
}


def start(job_waiting: bool) -> tuple[float, float]:
    """Wall and CPU seconds from starting the child to its ready message (it is closed afterwards)."""
    cpu, began = machine_cpu_s(), time.perf_counter()
    with new_child(job_waiting=job_waiting) as child:
        child.receive("ready")
        return time.perf_counter() - began, machine_cpu_s() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the three starts")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    times: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory() as scratch:
        blocked = Path(scratch) / "a-file"
        blocked.write_text("a folder cannot be made under a file")
        usable = os.environ.get(FOLDER_ENV)
        for _ in range(args.rounds):
            times["waiting"].append(start(job_waiting=True))
            times["warm"].append(start(job_waiting=False))
            os.environ[FOLDER_ENV] = str(blocked / "decoded")
            try:
                times["decoding"].append(start(job_waiting=False))
            finally:
                if usable is None:
                    del os.environ[FOLDER_ENV]
                else:
                    os.environ[FOLDER_ENV] = usable
    wall = {kind: statistics.median(w for w, _ in rounds) for kind, rounds in times.items()}
    cpu = {kind: statistics.median(c for _, c in rounds) for kind, rounds in times.items()}
    print(f"child start, {args.rounds} interleaved rounds, load {os.getloadavg()}")
    for kind, label in KINDS.items():
        rounds = " ".join(f"{w:.2f}/{c:.2f}" for w, c in times[kind])
        print(f"  {label:36s}: median {wall[kind]:.2f} s wall, {cpu[kind]:.2f} s CPU  (wall/CPU: {rounds})")
    print(f"  full / waiting: {wall['warm'] / wall['waiting']:.2f}x wall, "
          f"{cpu['warm'] / cpu['waiting']:.2f}x CPU")
    print(f"  decoding / mapped (full warm-ups): {wall['decoding'] / wall['warm']:.2f}x wall, "
          f"{cpu['decoding'] / cpu['warm']:.2f}x CPU")


if __name__ == "__main__":
    main()
