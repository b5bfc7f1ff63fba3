"""One pass over sampled images: penultimate features, logits and labels.

The pipeline is split so the model is the bottleneck, not the data: data-loading workers decode and fit
each image (uint8, at crop size) while the device runs the previous batch; the batch is moved as uint8
(4× less traffic than floats), scaled and normalised on the device, and fed channels_last. On CUDA the
forward runs under bf16 autocast; outputs are stored as float32. Memory is the batch in flight plus the
(n, D) and (n, C) outputs: images are never all held at once.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from zootriage.core.device import resolve_device
from zootriage.core.zoo.preprocess import Preprocess

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Extraction:
    features: np.ndarray  # (n, D) float32, penultimate layer
    logits: np.ndarray  # (n, C) float32
    labels: np.ndarray  # (n,) int64


def default_workers(device: torch.device) -> int:
    """One loader per spare pair of cores on the CPU (the forward needs the rest), more on a GPU.

    None inside a daemonic process (a Celery prefork child), which may not start children: loading
    then happens in the main process, slower but correct.
    """
    if multiprocessing.current_process().daemon:
        return 0
    cores = os.cpu_count() or 1
    return min(8, cores - 1) if device.type == "cuda" else max(1, min(4, cores // 2))


def extract(
    module: nn.Module,
    images: Dataset[tuple[torch.Tensor, int]],
    preprocess: Preprocess,
    *,
    batch_size: int = 64,
    device: str | torch.device | None = None,
    num_workers: int | None = None,
    progress: Progress | None = None,
) -> Extraction:
    """Run ``module`` (returning ``(penultimate, logits)``) over ``images`` (uint8 CHW, label)."""
    dev = resolve_device(device)
    total = len(images)  # type: ignore[arg-type]
    workers = default_workers(dev) if num_workers is None else num_workers
    loader = DataLoader(
        images,
        batch_size=batch_size,
        shuffle=False,
        num_workers=workers,
        pin_memory=dev.type == "cuda",
        prefetch_factor=4 if workers else None,
    )
    module.to(dev, memory_format=torch.channels_last)  # type: ignore[call-overload]
    scale = torch.tensor(preprocess.std, device=dev).view(1, -1, 1, 1) * 255.0
    shift = torch.tensor(preprocess.mean, device=dev).view(1, -1, 1, 1) * 255.0
    features: np.ndarray | None = None
    logits: np.ndarray | None = None
    labels = np.empty(total, dtype=np.int64)
    done = 0
    if progress:
        progress("extract", 0, total)
    with torch.inference_mode(), torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
        for pixels, batch_labels in loader:
            x = pixels.to(dev, non_blocking=True).contiguous(memory_format=torch.channels_last)
            x = (x.float() - shift) / scale  # (x/255 - mean) / std, in one pass
            pen, out = module(x)
            pen = pen.flatten(1).float().cpu().numpy()
            out = out.float().cpu().numpy()
            if features is None or logits is None:
                features = np.empty((total, pen.shape[1]), dtype=np.float32)
                logits = np.empty((total, out.shape[1]), dtype=np.float32)
            end = done + len(pen)
            features[done:end], logits[done:end] = pen, out
            labels[done:end] = batch_labels.numpy()
            done = end
            if progress:
                progress("extract", done, total)
    if features is None or logits is None:
        raise ValueError("no images to extract features from")
    return Extraction(features, logits, labels)
