"""Is the extraction pipeline the bottleneck? Whole extraction vs the bare forward, measured in one run.

For each model: images per second of ``core.features.extract`` on real JPEGs (decode, the weights' own
resize and crop, uint8 transfer, normalisation, forward) against the same model's forward alone on
pre-made normalised tensors, same batch size. The goal is a ratio ≥ 0.8 on the CPU. Weights are random
(speed does not depend on their values); the images are foolbox's ImageNet samples, repeated.

    .venv/bin/python benchmarks/extract_speed.py [--models resnet18 resnet50] [--images 256] [--rounds 5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torchvision
from safetensors.torch import save_file

from zootriage.core.data.builtin import open_builtin
from zootriage.core.data.fitting import FittedImages
from zootriage.core.device import resolve_device
from zootriage.core.features import extract
from zootriage.core.zoo.loader import load_model
from zootriage.core.zoo.refs import parse_model_ref


def bare_forward(model: torch.nn.Module, batches: list[torch.Tensor], device: torch.device) -> float:
    """Images per second of the forward alone (channels_last, inference mode, as in ``extract``)."""
    model.to(device, memory_format=torch.channels_last)  # type: ignore[call-overload]
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16,
                                                enabled=device.type == "cuda"):
        model(batches[0].to(device))  # warm-up
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for x in batches:
            model(x.to(device).contiguous(memory_format=torch.channels_last))
        if device.type == "cuda":
            torch.cuda.synchronize()
    return sum(len(x) for x in batches) / (time.perf_counter() - start)


def pipeline(model: torch.nn.Module, dataset: FittedImages, batch: int, device: torch.device) -> float:
    preprocess = dataset.preprocess
    warm = FittedImages(dataset.images, dataset.indices[:batch], preprocess)
    extract(model, warm, preprocess, batch_size=batch, device=device, num_workers=0)
    start = time.perf_counter()
    extract(model, dataset, preprocess, batch_size=batch, device=device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return len(dataset) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet18", "resnet50"])
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    device = resolve_device(args.device)
    images = open_builtin("foolbox-imagenet", None)
    indices = np.arange(args.images) % len(images)
    threads = torch.get_num_threads()
    print(f"device {device}, torch threads {threads}, {args.images} images, batch {args.batch}")
    for arch in args.models:
        with tempfile.TemporaryDirectory() as folder:  # random weights, loaded the way uploads are
            torch.manual_seed(0)
            path = Path(folder) / f"{arch}.safetensors"
            save_file(torchvision.models.get_model(arch).state_dict(), path)
            loaded = load_model(parse_model_ref(f"tv:{arch}@{path}"))
        module, preprocess = loaded.module, loaded.preprocess
        dataset = FittedImages(images, indices, preprocess)
        made = torch.randn(args.images, 3, *preprocess.crop)
        batches = list(made.split(args.batch))
        ratios, forwards, wholes = [], [], []
        for k in range(args.rounds):  # paired, alternating order: drifting load from other work cancels
            first_bare = k % 2 == 0
            forward = bare_forward(module, batches, device) if first_bare else None
            whole = pipeline(module, dataset, args.batch, device)
            forward = forward if forward is not None else bare_forward(module, batches, device)
            ratios.append(whole / forward)
            forwards.append(forward)
            wholes.append(whole)
        print(f"{arch:10s} {preprocess.crop[0]}px: extraction {np.median(wholes):6.1f} img/s, bare forward "
              f"{np.median(forwards):6.1f} img/s; ratio median {np.median(ratios):.2f} "
              f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})")

if __name__ == "__main__":
    main()
