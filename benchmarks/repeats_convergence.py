"""How the noise of D_eff and Ψ_eff is measured by GLUE repeats, and what a default job costs.

For each data set (ccexam's MNIST CNN features on builtin:mnist, and the synthetic examples A and B
of docs/method.md) it runs ``--max-repeats`` independent single repeats (each its own class subsample
and draws, as ``analyze(repeats=R)`` does) and prints, for R = 2, 3, 5, 8, ...: the standard deviation
of the first R repeats (the estimate a run with R repeats would store), the standard error of their
mean, and the smallest relative difference between two such runs that the Welch test of
``core.noise`` can call significant (q_{0.975, ν} · se · √2 / mean, ν ≈ 2(R − 1)). Then it times
``compute_markers`` once under the default protocol and once with repeats=1, and prints the ratio.

``--sampling`` measures instead whether the repeats' spread is the noise between two runs on
different images (docs/noise.md, ``core.glue_subsets``), on the ccexam features with 50 points per
class: the std of D_eff and Ψ_eff over R disjoint repeats of one extracted sample of R × 50 images
per class (what a default run stores), over R repeats of one sample of 50 per class (draws only, the
old default), and over R runs that each extract 50 new images per class (seeds 1..R, the truth), with
the ratios of the first two to the third.

    .venv/bin/python benchmarks/repeats_convergence.py [--max-repeats 12] [--n-t 1000] [--sampling]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from tests.mnist_features import ccexam_features
from zootriage.core.examples import example
from zootriage.core.glue import analyze
from zootriage.core.markers import Protocol, compute_markers


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


def sampling_noise(repeats: int, n_t: int) -> None:
    markers = ("dimension", "utilization")
    x, y = ccexam_features(per_class=repeats * 50, seed=0)
    disjoint = analyze(x, y, n_t=n_t, seed=0, points_per_class=50, repeats=repeats)
    x, y = ccexam_features(per_class=50, seed=0)
    same = analyze(x, y, n_t=n_t, seed=0, points_per_class=50, repeats=repeats)
    fresh = [analyze(*ccexam_features(per_class=50, seed=s), n_t=n_t, seed=s) for s in range(1, repeats + 1)]
    truth = {m: float(np.std([getattr(r, m) for r in fresh], ddof=1)) for m in markers}
    print(f"\nccexam MNIST, 10 classes x 50 points, n_t={n_t}, {repeats} repeats / seeds")
    print(f"{'marker':>12} {'new images':>11} {'disjoint':>9} {'ratio':>6} {'draws-only':>11} {'ratio':>6}")
    for m in markers:
        d, s = (disjoint.std or {})[m], (same.std or {})[m]
        print(f"{m:>12} {truth[m]:11.4f} {d:9.4f} {d / truth[m]:6.2f} {s:11.4f} {s / truth[m]:6.2f}")
    kinds = [r.noise.kind if r.noise else None for r in (disjoint, same)]
    print(f"noise labels: {kinds[0]} (R x 50 images), {kinds[1]} (50 images)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-repeats", type=int, default=12)
    parser.add_argument("--n-t", type=int, default=1000)
    parser.add_argument("--sampling", action="store_true", help="only the image-sampling noise check")
    args = parser.parse_args()
    if args.sampling:
        sampling_noise(args.max_repeats, args.n_t)
        return
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
