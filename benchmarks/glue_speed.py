"""GLUE solver speed: the batched Lawson–Hanson solver against per-draw scipy NNLS, in one run.

Shape of shared/GLUE.md's cost note ("ReLU-like"): P = 10 classes × M = 50 points, N = 512, n_t = 2000.
Prints both times, their ratio and the largest relative difference of the markers (the two solvers
must agree), then a table of how the fast path's time grows with n_t, P, M and N.

    .venv/bin/python benchmarks/glue_speed.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from core.examples import relu_like
from core.glue import MARKERS, analyze


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n_t = 500 and a smaller scaling table")
    parser.add_argument("--device", default=None, help="device of the fast solver (default: CUDA if present)")
    args = parser.parse_args()
    n_t = 500 if args.quick else 2000

    x, y = relu_like(seed=0, n_classes=10, per_class=50, dim=512)
    print(f"torch threads: {torch.get_num_threads()}, fast solver on {args.device or 'auto'}")
    t_fast, fast = timed(lambda: analyze(x, y, n_t=n_t, device=args.device), repeat=3)
    t_ref, ref = timed(lambda: analyze(x, y, n_t=n_t, solver="reference", device="cpu"), repeat=1)
    worst = max(abs(getattr(fast, m) - getattr(ref, m)) / max(abs(getattr(ref, m)), 1e-300) for m in MARKERS)
    print(f"P=10 M=50 N=512 n_t={n_t}")
    print(f"  reference (scipy nnls per draw): {t_ref:8.3f} s")
    print(f"  fast (batched Lawson-Hanson)   : {t_fast:8.3f} s   fallbacks: {fast.n_fallback}")  # type: ignore[attr-defined]
    print(f"  speed-up                       : {t_ref / t_fast:8.1f} x")
    print(f"  largest relative marker difference: {worst:.2e}")

    print("\nfast-path scaling (median of 3):")
    print(f"{'n_t':>6}{'P':>5}{'M':>5}{'N':>6}{'time s':>10}{'N_crit':>9}")
    base = {"n_t": n_t, "P": 10, "M": 50, "N": 512}
    grid = {
        "n_t": [n_t // 4, n_t // 2, n_t],
        "P": [5, 10, 20],
        "M": [25, 50, 100],
        "N": [128, 512, 2048],
    }
    if args.quick:
        grid = {k: v[:2] for k, v in grid.items()}
    for key, values in grid.items():
        for v in values:
            cfg = {**base, key: v}
            xs, ys = relu_like(seed=1, n_classes=cfg["P"], per_class=cfg["M"], dim=cfg["N"])
            t, res = timed(
                lambda xs=xs, ys=ys, cfg=cfg: analyze(xs, ys, n_t=cfg["n_t"], device=args.device), 3
            )
            print(f"{cfg['n_t']:>6}{cfg['P']:>5}{cfg['M']:>5}{cfg['N']:>6}{t:>10.3f}{res.n_crit:>9.2f}")  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
