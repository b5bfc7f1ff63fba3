"""GLUE solver speed: the batched Lawson–Hanson solver against per-draw scipy NNLS, idle and loaded.

Shape of the issue: P = 10 classes × M = 50 points (ReLU-like), N = 512, n_t = 1000 by default
(``--n-t`` sets it: the issue asks for 400 and 1000, since a fixed cost per analysis weighs most on
small requests). Prints, for the machine as it is and again while two busy processes
(``while True: pass``, started here, bounded in time and killed at the end) compete for the cores:
both solvers' median times over interleaved rounds, their ratio and the largest relative difference
of the markers (the two solvers must agree). Also the load average, since the figures mean little
without it.

    .venv/bin/python benchmarks/glue_speed.py [--n-t 1000] [--rounds 3] [--device cuda]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator

import torch

from zootriage.core.examples import relu_like
from zootriage.core.glue import MARKERS, analyze

_BUSY = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


@contextlib.contextmanager
def busy_processes(count: int, seconds: float) -> Iterator[None]:
    """``count`` CPU-bound processes that stop by themselves after ``seconds`` and are killed on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", _BUSY.format(seconds=seconds)]) for _ in range(count)]
    try:
        time.sleep(0.5)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def compare(x, y, n_t: int, device: str | None, label: str, rounds: int) -> None:
    """Warm both paths up once (imports, thread pools, allocator), then ``rounds`` interleaved rounds
    of three fast analyses and one reference analysis, so that a slow spell of the shared machine
    hits both; prints the medians and their ratio."""
    fast_run = lambda: analyze(x, y, n_t=n_t, device=device)  # noqa: E731
    ref_run = lambda: analyze(x, y, n_t=n_t, solver="reference", device="cpu")  # noqa: E731
    fast, ref = fast_run(), analyze(x, y, n_t=min(n_t, 50), solver="reference", device="cpu")
    t_fast, t_ref = [], []
    for _ in range(rounds):
        for _ in range(3):
            start = time.perf_counter()
            fast = fast_run()
            t_fast.append(time.perf_counter() - start)
        start = time.perf_counter()
        ref = ref_run()
        t_ref.append(time.perf_counter() - start)
    worst = max(abs(getattr(fast, m) - getattr(ref, m)) / max(abs(getattr(ref, m)), 1e-300) for m in MARKERS)
    fast_s, ref_s = statistics.median(t_fast), statistics.median(t_ref)
    load = ", ".join(f"{a:.2f}" for a in os.getloadavg())
    print(f"{label} (load average {load} over 1, 5, 15 min: above the 2 cores means a busy machine)")
    print(f"  reference (scipy nnls per draw): {ref_s:8.3f} s  (median of {len(t_ref)})")
    print(f"  fast (batched Lawson-Hanson)   : {fast_s:8.3f} s  (median of {len(t_fast)})")
    print(f"  draws handed to the reference  : {fast.n_fallback:8d}")
    print(f"  speed-up                       : {ref_s / fast_s:8.1f} x")
    print(f"  largest relative marker difference: {worst:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-t", type=int, default=1000, help="Gaussian draws per analysis")
    parser.add_argument("--device", default=None, help="device of the fast solver (default: CUDA if present)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of 3 fast + 1 reference")
    parser.add_argument(
        "--busy-seconds", type=float, default=300, help="upper bound on the busy processes' life"
    )
    args = parser.parse_args()
    if args.rounds < 1 or args.n_t < 1:
        parser.error("--rounds and --n-t must be at least 1")
    x, y = relu_like(seed=0, n_classes=10, per_class=50, dim=512)
    where = args.device or "auto"
    print(f"torch threads: {torch.get_num_threads()}, cores: {os.cpu_count()}, fast solver on {where}")
    print(f"P=10 M=50 N=512 n_t={args.n_t}")
    compare(x, y, args.n_t, args.device, "as the machine is", args.rounds)
    with busy_processes(2, args.busy_seconds):
        compare(x, y, args.n_t, args.device, "with two competing busy processes", args.rounds)


if __name__ == "__main__":
    main()
