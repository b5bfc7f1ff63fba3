"""A job's time on the worker's path against the bare computation of the same job, in one run.

The worker's path (``core.scoring``): the dataset opened and sampled, the model loaded and run in a
sandboxed child, the features through the feature cache, then the markers. Measured two ways: with a
warm child (``core.warm_pool``: started ahead, torch imported) and with a cold one (started for the
job). The bare computation does the same work in this process with no child and no cache: open and
sample the dataset, load the model, one extraction pass, the markers. Each round runs the three in
turn (so machine load hits them alike) on a fresh sample seed (so no cache is reused); each job
starts once the pool's child is warm (the pool starts a replacement as a job's child closes). The
medians and the ratios to the bare time are printed, with the load average.

    .venv/bin/python benchmarks/warm_job.py [--model mnist-cnn|resnet50] [--rounds 3]

Both on builtin:mnist, 10 classes x 50 images (the issue's sizes). ``mnist-cnn``: ccexam's MNIST CNN
(a real trained checkpoint, from the test packages) at 28 px. ``resnet50``: torchvision's
architecture as a state dict (random weights: the cost is the same), at 224 px through its own
preprocessing (no package ships 500 ImageNet images).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from zootriage.core.data.fitting import FittedImages
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.data.sampling import sample
from zootriage.core.device import resolve_device
from zootriage.core.extraction import new_child
from zootriage.core.features import extract
from zootriage.core.markers import Protocol, compute_markers
from zootriage.core.scoring import score
from zootriage.core.warm_pool import WarmPool
from zootriage.core.zoo.loader import load_model
from zootriage.core.zoo.refs import parse_model_ref

PROTOCOL = Protocol(points_per_class=10, n_t=200, repeats=5, seed=0)


def _checkpoint(kind: str, folder: Path) -> str:
    if kind == "mnist-cnn":
        import sysconfig

        from ccexam.models import MNISTNet

        net = MNISTNet(28)
        state = Path(sysconfig.get_paths()["purelib"]) / "ccexam" / "weights" / "mnist.pth"
        net.load_state_dict(torch.load(state, map_location="cpu", weights_only=True))
        program = torch.export.export(net.eval(), (torch.zeros(2, 1, 28, 28),),
                                      dynamic_shapes=({0: torch.export.Dim("batch")},))
        path = folder / "mnist_cnn.pt2"
        meta = ('{"preprocess": {"channels": 1, "crop": [28, 28], "resize": null, "mean": [0.1307], '
                '"std": [0.3081]}}')
        torch.export.save(program, path, extra_files={"zootriage.json": meta})
        return f"ckpt:{path}"
    import torchvision

    path = folder / "resnet50.pt"
    torch.save(torchvision.models.resnet50().state_dict(), path)
    return f"tv:resnet50@{path}"


def bare(model_ref: str, sampling: Sampling) -> float:
    start = time.perf_counter()
    images = open_dataset(parse_dataset_ref("builtin:mnist"), sampling.split)
    chosen = sample(images, sampling)
    loaded = load_model(parse_model_ref(model_ref), resolve_device(None))
    out = extract(loaded.module, FittedImages(images, chosen.indices, loaded.preprocess), loaded.preprocess,
                  batch_size=64, num_workers=0)
    compute_markers(out.features, out.labels, out.logits, protocol=PROTOCOL, logits_match_labels=True)
    return time.perf_counter() - start


def service_path(model_ref: str, sampling: Sampling, cache: Path, pool: WarmPool | None) -> float:
    start = time.perf_counter()
    score(parse_model_ref(model_ref), parse_dataset_ref("builtin:mnist"), sampling, PROTOCOL,
          cache=cache, num_workers=0, child=pool.take if pool else None)
    return time.perf_counter() - start


def _until_warm(pool: WarmPool) -> None:
    """Wait until the pool holds a warm child, then a second more (its start's last work settles)."""
    deadline = time.monotonic() + 300
    while pool.waiting() < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("mnist-cnn", "resnet50"), default="mnist-cnn")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    times: dict[str, list[float]] = {"bare": [], "warm": [], "cold": []}
    # the pool's children see the GPU where the jobs run on one (as worker.warm starts them)
    gpu = resolve_device(None).type == "cuda"
    starter = functools.partial(new_child, None, gpu)
    with tempfile.TemporaryDirectory() as scratch, WarmPool(starter, size=1) as pool:
        folder = Path(scratch)
        ref = _checkpoint(args.model, folder)
        bare(ref, Sampling(classes=10, per_class=50, seed=10_000))  # imports and first-call costs
        _until_warm(pool)  # the pool's first child (started beside the line above)
        for round_ in range(args.rounds):
            sampling = Sampling(classes=10, per_class=50, seed=round_)
            times["warm"].append(service_path(ref, sampling, folder / f"warm{round_}", pool))
            _until_warm(pool)  # the replacement, started as the warm job ended, before the next job
            times["cold"].append(service_path(ref, sampling, folder / f"cold{round_}", None))
            times["bare"].append(bare(ref, sampling))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"model {args.model}, 10 classes x 50 images, {args.rounds} rounds, on {'cuda' if gpu else 'cpu'}, "
          f"load {os.getloadavg()}")
    for name in ("bare", "warm", "cold"):
        rounds = " ".join(f"{value:.2f}" for value in times[name])
        print(f"  {name:5s} median {median[name]:7.2f} s  ratio to bare {median[name] / median['bare']:.2f}x"
              f"  (rounds: {rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
