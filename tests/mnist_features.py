"""Penultimate features of a real small model on real images: ccexam's MNIST CNN on builtin:mnist.

Used by tests and benchmarks that need features with a trained network's geometry, not synthetic
Gaussians. The penultimate layer is the ReLU output before ccexam's last linear layer (128 units).
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np
import torch

from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.data.sampling import sample
from zootriage.core.device import resolve_device

MEAN, STD = 0.1307, 0.3081


def ccexam_features(per_class: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(n, 128) float64 features and (n,) labels of ``per_class`` MNIST test images per digit."""
    features, _, labels = ccexam_outputs(per_class, seed)
    return features, labels


def ccexam_outputs(per_class: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, 128) float64 features, (n, 10) float64 logits and (n,) labels of ``per_class`` MNIST test
    images per digit."""
    from ccexam.models import MNISTNet

    model = MNISTNet(28)
    weights = Path(sysconfig.get_paths()["purelib"]) / "ccexam" / "weights" / "mnist.pth"
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    dev = resolve_device(None)
    model.eval().to(dev)
    images = open_dataset(parse_dataset_ref("builtin:mnist"), "test")
    chosen = sample(images, Sampling(classes=None, per_class=per_class, seed=seed)).indices
    pictures = [torch.as_tensor(np.asarray(images.loader(int(i)))) for i in chosen]
    batch = torch.stack(pictures).reshape(len(chosen), 1, 28, 28).to(dev, torch.float32) / 255.0
    captured: list[torch.Tensor] = []
    hook = model.classifier[1].register_forward_hook(lambda _m, _i, out: captured.append(out))
    with torch.no_grad():
        logits = model((batch - MEAN) / STD)
    hook.remove()
    labels = np.array([int(images.labels[int(i)]) for i in chosen])
    return captured[0].double().cpu().numpy(), logits.double().cpu().numpy(), labels
