"""A rescore whose features are cached (another protocol on the same model and sample): with the
builtin set's sample recorded (``core.sample_records``: no child at all) against the same rescore with
its record removed (a cold child opens the set and samples it, as every cached job did before the
records). The MNIST CNN program on builtin:mnist, 10 classes x 50 images; interleaved rounds in one
run, one cache; prints both medians and their ratio, with the load average.

    .venv/bin/python benchmarks/rescore.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from warm_job import _checkpoint  # the benchmarks' MNIST CNN program

from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.markers import Protocol
from zootriage.core.sample_records import sample_key
from zootriage.core.scoring import score
from zootriage.core.storage import LocalStore, sample_entry
from zootriage.core.zoo.refs import parse_model_ref

MNIST = parse_dataset_ref("builtin:mnist")
SAMPLING = Sampling(classes=10, per_class=50, seed=0)


def rescore_s(model: str, cache: Path, n_t: int) -> tuple[float, bool]:
    start = time.perf_counter()
    result = score(parse_model_ref(model), MNIST, SAMPLING, Protocol(points_per_class=10, n_t=n_t, seed=0),
                   cache=cache, num_workers=0)
    return time.perf_counter() - start, result.features_cached


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved pairs of rescores")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    times: dict[str, list[float]] = {"recorded": [], "child": []}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        model, cache = _checkpoint("mnist-cnn", folder), folder / "cache"
        rescore_s(model, cache, 100)  # the extraction, and the sample's record
        key = sample_key(MNIST, SAMPLING)
        assert key is not None
        record = LocalStore(cache).path(sample_entry(key))
        for round_ in range(args.rounds):
            for kind in ("recorded", "child"):
                if kind == "child":
                    record.unlink()  # the child samples again (and writes the record back)
                seconds, cached = rescore_s(model, cache, 101 + round_)
                assert cached and record.exists()
                times[kind].append(seconds)
    median = {kind: statistics.median(values) for kind, values in times.items()}
    print(f"rescore of cached features, {args.rounds} interleaved rounds, load {os.getloadavg()}")
    for kind, label in (("recorded", "sample recorded (no child)"), ("child", "a cold child samples")):
        rounds = " ".join(f"{value:.2f}" for value in times[kind])
        print(f"  {label:27s}: median {median[kind]:.2f} s  (rounds: {rounds})")
    print(f"  child / recorded: {median['child'] / median['recorded']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
