"""How the noise of D_eff and Ψ_eff is measured by GLUE repeats, and what a default job costs.

For each data set (ccexam's MNIST CNN features on builtin:mnist, and the synthetic examples A and B
of shared/GLUE.md) it runs ``--max-repeats`` independent single repeats (each its own class subsample
and draws, as ``analyze(repeats=R)`` does) and prints, for R = 2, 3, 5, 8, ...: the standard deviation
of the first R repeats (the estimate a run with R repeats would store), the standard error of their
mean, and the smallest relative difference between two such runs that the Welch test of
``core.noise`` can call significant (q_{0.975, ν} · se · √2 / mean, ν ≈ 2(R − 1)). Then it times
``compute_markers`` once under the default protocol and once with repeats=1, and prints the ratio.

    .venv/bin/python benchmarks/repeats_convergence.py [--max-repeats 12] [--n-t 1000]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from core.examples import example
from core.glue import analyze
from core.markers import Protocol, compute_markers
from tests.mnist_features import ccexam_features


def convergence(name: str, x: np.ndarray, y: np.ndarray, max_repeats: int, n_t: int) -> None:
    runs = [analyze(x, y, n_t=n_t, seed=1000 + k, points_per_class=50) for k in range(max_repeats)]
    print(f"\n{name}: {x.shape[0]} points, {x.shape[1]}-d, degenerate: {runs[0].degenerate}")
    print(f"{'R':>3} {'marker':>12} {'mean':>9} {'std':>9} {'se':>9} {'min rel. diff':>14}")
    for r in [k for k in (2, 3, 5, 8, 12, 16, 24) if k <= max_repeats]:
        for marker in ("dimension", "utilization"):
            values = np.array([getattr(run, marker) for run in runs[:r]])
            mean, std = values.mean(), values.std(ddof=1)
            se = std / math.sqrt(r)
            q = stats.t.ppf(0.975, 2 * (r - 1))
            detectable = q * se * math.sqrt(2) / mean
            print(f"{r:>3} {marker:>12} {mean:9.4f} {std:9.4f} {se:9.4f} {detectable:14.2%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-repeats", type=int, default=12)
    parser.add_argument("--n-t", type=int, default=1000)
    args = parser.parse_args()
    x, y = ccexam_features(per_class=60)
    convergence("ccexam MNIST CNN, penultimate (128-d)", x, y, args.max_repeats, args.n_t)
    for name in ("A", "B"):
        convergence(f"synthetic example {name}", *example(name), args.max_repeats, args.n_t)

    default = Protocol()
    start = time.perf_counter()
    compute_markers(x, y, protocol=default)
    t_default = time.perf_counter() - start
    start = time.perf_counter()
    compute_markers(x, y, protocol=Protocol(repeats=1))
    t_one = time.perf_counter() - start
    print(f"\ncompute_markers on the ccexam features: default (repeats={default.repeats}) {t_default:.1f} s, "
          f"repeats=1 {t_one:.1f} s, ratio {t_default / t_one:.2f}")


if __name__ == "__main__":
    main()
