"""Speed and peak memory of every marker, and the chunked pairwise marker against a naive one.

    .venv/bin/python benchmarks/markers_speed.py                 # 10 classes × 500 points × 512 dims
    .venv/bin/python benchmarks/markers_speed.py --device cpu    # on the CPU even where CUDA is present
    .venv/bin/python benchmarks/markers_speed.py --large         # also mean_distance on 50,000 × 2,048

Everything runs on ``--device`` (default: ``core.device.resolve_device``'s choice, CUDA when
present). Each marker is timed through ``compute_markers(..., names=[...])`` (validation included);
the eight geometry markers share one GLUE call and are timed as one row. Peak memory is what a call
adds on the compute device, measured in a second process: on CUDA torch's peak allocation, on the
CPU the peak resident set (``VmHWM`` in /proc/self/status, reset before each call, under
``MALLOC_ENV``), which sees numpy's and torch's allocations alike. Absolute times depend on the
machine and its load; the ratios printed at the end are measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from zootriage.core.device import resolve_device
from zootriage.core.markers import Protocol, compute_markers, list_markers
from zootriage.core.markers.pairwise import mean_pairwise_distance


def _status_mib(field: str) -> float:
    match = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE)
    assert match is not None, field
    return int(match.group(1)) / 1024


#: glibc settings for the memory pass: every allocation above 128 KiB is its own mapping, returned
#: to the system when freed (by default the threshold grows after each large free, and freed blocks
#: then stay resident, so a peak of the resident set would miss later allocations that reuse them).
#: They slow allocation down, hence a separate process that only measures memory.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "0", "MALLOC_TOP_PAD_": "0"}


def seconds_of(fn: Callable[[], object], device: torch.device) -> float:
    """Wall time of one call, waiting for the device to finish."""
    start = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def peak_mib_of(fn: Callable[[], object], device: torch.device) -> float:
    """Peak MiB that one call adds on ``device``: torch's peak allocation on CUDA, the peak resident
    set on the CPU (meaningful under ``MALLOC_ENV``)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        fn()
        return (torch.cuda.max_memory_allocated(device) - base) / 2**20
    Path("/proc/self/clear_refs").write_text("5")  # resets the peak resident set to the current one
    base_mib = _status_mib("VmRSS")
    fn()
    return _status_mib("VmHWM") - base_mib


def naive_mean_distance(features: np.ndarray, device: torch.device) -> float:
    """The full n×n distance matrix at once: the baseline the chunked version must beat on memory."""
    x = torch.as_tensor(features, device=device)
    xc = x - x.mean(dim=0)
    sq = torch.einsum("ij,ij->i", xc, xc)
    d = (sq[:, None] + sq[None, :] - 2 * xc @ xc.T).clamp(min=0).sqrt()
    return float(d.triu(1).sum()) / (len(d) * (len(d) - 1) / 2)


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
    parser.add_argument("--device", default=None, help="cpu, cuda, ... (default: CUDA when present)")
    parser.add_argument("--large", action="store_true", help="also run mean_distance on 50,000 × 2,048")
    parser.add_argument("--memory-pass", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    device = resolve_device(args.device)

    features, labels, logits = synthetic(10, 500, 512)
    protocol = Protocol(n_t=args.n_t)

    def suite_call(names: list[str] | None) -> Callable[[], object]:
        return lambda: compute_markers(
            features, labels, logits, protocol=protocol, device=device, names=names
        )

    suite = {
        "geometry (8 markers, 1 GLUE call)": suite_call([s.name for s in list_markers(group="geometry")])
    }
    suite |= {s.name: suite_call([s.name]) for s in list_markers() if s.group != "geometry"}
    suite["whole suite, one call"] = suite_call(None)
    pairs: dict[str, Callable[[], object]] = {
        "naive": lambda: naive_mean_distance(features, device),
        "chunked (64 MiB blocks, the default)": lambda: mean_pairwise_distance(features, device=device),
        "chunked (4 MiB blocks)": lambda: mean_pairwise_distance(features, 4 * 2**20, device=device),
    }
    large: dict[str, Callable[[], object]] = {}
    if args.large:
        big = np.random.default_rng(1).standard_normal((50_000, 2048))
        large["chunked (64 MiB blocks)"] = lambda: mean_pairwise_distance(big, device=device)
    cases = {**suite, **pairs, **large}
    if args.memory_pass:
        print(json.dumps({label: peak_mib_of(fn, device) for label, fn in cases.items()}))
        return
    seconds = {label: seconds_of(fn, device) for label, fn in cases.items()}
    child = subprocess.run(
        [sys.executable, __file__, *sys.argv[1:], "--memory-pass"],
        env={**os.environ, **MALLOC_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    peaks = json.loads(child.stdout)

    print(
        f"suite on {features.shape[0]} × {features.shape[1]} features, 10 classes, on {device}; "
        f"{protocol.to_dict()}"
    )
    for label in suite:
        report(label, seconds[label], peaks[label])
    rows_total = sum(seconds[label] for label in suite if label != "whole suite, one call")
    print(f"  (sum of the rows above the whole suite: {rows_total:.3f} s)")

    print(
        f"\nmean_distance on {features.shape[0]} × {features.shape[1]}, chunked vs a naive full n×n matrix:"
    )
    naive = seconds["naive"], peaks["naive"]
    for label in pairs:
        report(label, seconds[label], peaks[label], None if label == "naive" else naive)

    for label in large:
        print(
            f"\nmean_distance on 50,000 × 2,048 (input {big.nbytes / 2**20:.0f} MiB; "
            f"a full distance matrix would take {50_000**2 * 8 / 2**30:.1f} GiB):"
        )
        report(label, seconds[label], peaks[label])


if __name__ == "__main__":
    main()
