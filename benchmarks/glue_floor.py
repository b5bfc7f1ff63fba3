"""Where one GLUE analysis spends its time, and its floor: the unavoidable linear algebra.

Shape of benchmarks/glue_speed.py (P = 10 × M = 50, N = 512), one thread (``workers`` = 1), so that
every stage runs in the calling thread and its CPU time (``time.thread_time``, less sensitive than
the wall clock to a busy shared machine) can be read. Prints, as the medians over ``--rounds``
analyses after one warm-up:

* the stages of ``core.glue.analyze``: preprocessing (centring, QR rotation, scaling), the solver,
  the cone points, the geometry, the regime check, and the rest (input checks, draws, summaries);
* the floor: the kernels no implementation of this method avoids, timed inside the same analyses:
  the QR of the points (rotation into their span), K = XXᵀ and b = σ ⊙ (X t) (the solver's set-up),
  the gradient products with K (``embedding_bag``: |S| rows of K per draw and step), the passive
  systems' Cholesky factors and triangular solves, and the geometry's eigendecompositions.

    .venv/bin/python benchmarks/glue_floor.py [--n-t 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import torch

from zootriage.core import glue, nnls
from zootriage.core.examples import relu_like

STAGES = ("preprocess", "solve_batched", "cone_points", "effective_geometry", "regime_of")
# (owner, attribute, label): the kernels of the floor, looked up by their callers at call time.
KERNELS: tuple[tuple[Any, str, str], ...] = (
    (torch.linalg, "qr", "QR rotation"),
    (nnls._Cloud, "__init__", "K = XXᵀ"),
    (nnls._Problems, "__init__", "b = σ ⊙ (X t)"),
    (torch.nn.functional, "embedding_bag", "gradient K(σ⊙λ) + bags"),
    (torch.linalg, "cholesky_ex", "Cholesky (inner loop)"),
    (torch.linalg, "solve_triangular", "triangular solves"),
    (torch.linalg, "eigh", "geometry eigh"),
)


@contextlib.contextmanager
def timed(owner: Any, name: str, totals: dict[str, float], label: str) -> Iterator[None]:
    """Wrap ``owner.name`` so that its CPU time is added to ``totals[label]`` (restored on exit)."""
    original: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            totals[label] += time.thread_time() - start

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, original)


def one_analysis(x: Any, y: Any, n_t: int) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    with contextlib.ExitStack() as stack:
        for stage in STAGES:
            stack.enter_context(timed(glue, stage, totals, stage))
        for owner, name, label in KERNELS:
            stack.enter_context(timed(owner, name, totals, label))
        start = time.thread_time()
        glue.analyze(x, y, n_t=n_t, device="cpu")
        totals["total"] = time.thread_time() - start
    # The geometry's eigh and embedding_bag run inside its stage, the QR inside preprocessing: the
    # stages are disjoint, the kernels overlap them.
    totals["rest"] = totals["total"] - sum(totals[s] for s in STAGES)
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-t", type=int, default=1000, help="Gaussian draws per analysis")
    parser.add_argument("--rounds", type=int, default=5, help="analyses measured after one warm-up")
    args = parser.parse_args()
    if args.rounds < 1 or args.n_t < 1:
        parser.error("--rounds and --n-t must be at least 1")
    torch.set_num_threads(1)  # analyze's workers: every stage in this thread
    x, y = relu_like(seed=0, n_classes=10, per_class=50, dim=512)
    one_analysis(x, y, args.n_t)
    runs = [one_analysis(x, y, args.n_t) for _ in range(args.rounds)]
    med = {k: statistics.median(r[k] for r in runs) * 1e3 for k in runs[0]}
    print(f"P=10 M=50 N=512 n_t={args.n_t}, one thread, CPU ms (median of {args.rounds})")
    print(f"load average {os.getloadavg()}")
    print(f"  total analysis          : {med['total']:8.1f}")
    for stage in (*STAGES, "rest"):
        print(f"  stage {stage:18s}: {med[stage]:8.1f}  ({med[stage] / med['total']:5.1%})")
    floor = 0.0
    for _, _, label in KERNELS:
        floor += med[label]
        print(f"  kernel {label:24s}: {med[label]:8.1f}")
    print(f"  floor (sum of kernels)  : {floor:8.1f}  ({floor / med['total']:5.1%} of the analysis)")


if __name__ == "__main__":
    main()
