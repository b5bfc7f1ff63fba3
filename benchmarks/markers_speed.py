"""Speed and peak memory of every marker, and the chunked pairwise marker against a naive one.

    .venv/bin/python benchmarks/markers_speed.py            # 10 classes × 500 points × 512 dims
    .venv/bin/python benchmarks/markers_speed.py --large    # also mean_distance on 50,000 × 2,048

Each marker is timed through ``compute_markers(..., names=[...])`` (validation included); the eight
geometry markers share one GLUE call and are timed as one row. Peak memory is traced with
``tracemalloc``, which sees numpy's allocations but not torch's (GLUE runs in torch). Absolute times
depend on the machine and its load; the ratio printed at the end is measured in the same run.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from core.markers import Protocol, compute_markers, list_markers
from core.markers.pairwise import mean_pairwise_distance


def measure(fn: Callable[[], object]) -> tuple[float, float]:
    """(seconds, peak MiB traced) of one call."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        fn()
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return seconds, peak / 2**20


def naive_mean_distance(features: np.ndarray) -> float:
    """The full n×n distance matrix at once: the baseline the chunked version must beat on memory."""
    xc = features - features.mean(axis=0)
    sq = np.einsum("ij,ij->i", xc, xc)
    d = np.sqrt(np.clip(sq[:, None] + sq[None, :] - 2 * xc @ xc.T, 0, None))
    return float(d[np.triu_indices(len(d), k=1)].mean())


def synthetic(n_classes: int, per_class: int, dim: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_classes), per_class)
    centres = rng.standard_normal((n_classes, dim))
    features = np.maximum(centres[labels] + rng.standard_normal((labels.size, dim)), 0.0)  # ReLU-like
    logits = 2.0 * np.eye(n_classes)[labels] + rng.standard_normal((labels.size, n_classes))
    return features, labels, logits


def report(label: str, seconds: float, peak: float, baseline: tuple[float, float] | None = None) -> None:
    line = f"  {label:<36}{seconds:>9.3f} s{peak:>9.1f} MiB"
    if baseline is not None:
        line += f"   time ×{seconds / baseline[0]:.2f}, memory ×{peak / baseline[1]:.2f}"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--n-t", type=int, default=Protocol().n_t, help="GLUE draws (default: the protocol's)"
    )
    parser.add_argument("--large", action="store_true", help="also run mean_distance on 50,000 × 2,048")
    args = parser.parse_args()

    features, labels, logits = synthetic(10, 500, 512)
    protocol = Protocol(n_t=args.n_t)
    print(f"suite on {features.shape[0]} × {features.shape[1]} features, 10 classes; {protocol.to_dict()}")
    rows = [("geometry (8 markers, 1 GLUE call)", [s.name for s in list_markers(group="geometry")])]
    rows += [(s.name, [s.name]) for s in list_markers() if s.group != "geometry"]
    total = 0.0
    for label, names in rows:
        seconds, peak = measure(
            lambda names=names: compute_markers(features, labels, logits, protocol=protocol, names=names)
        )
        total += seconds
        report(label, seconds, peak)
    seconds, peak = measure(lambda: compute_markers(features, labels, logits, protocol=protocol))
    report("whole suite, one call", seconds, peak)
    print(f"  (sum of the rows above: {total:.3f} s)")

    print(
        f"\nmean_distance on {features.shape[0]} × {features.shape[1]}, chunked vs a naive full n×n matrix:"
    )
    naive = measure(lambda: naive_mean_distance(features))
    report("naive", *naive)
    report("chunked (64 MiB blocks, the default)", *measure(lambda: mean_pairwise_distance(features)), naive)
    report(
        "chunked (4 MiB blocks)",
        *measure(lambda: mean_pairwise_distance(features, max_block_bytes=4 * 2**20)),
        naive,
    )

    if args.large:
        big = np.random.default_rng(1).standard_normal((50_000, 2048))
        print(
            f"\nmean_distance on 50,000 × 2,048 (input {big.nbytes / 2**20:.0f} MiB; "
            f"a full distance matrix would take {50_000**2 * 8 / 2**30:.1f} GiB):"
        )
        report("chunked (64 MiB blocks)", *measure(lambda: mean_pairwise_distance(big)))


if __name__ == "__main__":
    main()
