"""A sandboxed extraction child's start, until it says it is ready: started for a job that waits for it
(``new_child(job_waiting=True)``: the imports alone) against one started ahead of its job (a warm pool's:
the imports, every builtin data set decoded, the export modules, the kernels' set-up). Interleaved
rounds in one run; prints both medians and their ratio, with the load average.

    .venv/bin/python benchmarks/child_start.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from zootriage.core.extraction import new_child


def start_s(job_waiting: bool) -> float:
    """Seconds from starting the child to its ready message (it is closed afterwards)."""
    start = time.perf_counter()
    with new_child(job_waiting=job_waiting) as child:
        child.receive("ready")
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved pairs of starts")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for job_waiting in (True, False):
            times[job_waiting].append(start_s(job_waiting))
    median = {job_waiting: statistics.median(seconds) for job_waiting, seconds in times.items()}
    print(f"child start, {args.rounds} interleaved rounds, load {os.getloadavg()}")
    labels = {True: "for a waiting job (imports alone)", False: "ahead of its job (full warm-up)"}
    for job_waiting, label in labels.items():
        rounds = " ".join(f"{t:.2f}" for t in times[job_waiting])
        print(f"  {label:34s}: median {median[job_waiting]:.2f} s  (rounds: {rounds})")
    print(f"  full / waiting: {median[False] / median[True]:.2f}x")


if __name__ == "__main__":
    main()
