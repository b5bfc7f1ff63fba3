"""Label-preserving shifts of the ID test set (in the spirit of CIFAR-10-C), for images in [0, 1].

Each corruption keeps the class, so a model is scored by its own classifier's accuracy on the shifted
images. The paper found ID accuracy the best predictor on such shifts: they are the control that tells
class-level transfer (where geometry should win) from robustness to input noise.

- ``noise``: x + σ·ε, ε ~ N(0, 1) (seeded), clipped to [0, 1]; severity σ.
- ``blur``: Gaussian blur with standard deviation σ pixels (kernel 2⌈3σ⌉ + 1); severity σ.
- ``contrast``: m + c·(x − m), m the image's mean; severity c ∈ (0, 1] (smaller is harsher).
- ``rotation``: rotation by the severity in degrees (bilinear, zero fill).
"""

from __future__ import annotations

import math

import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2 import functional as F

SHIFTS: tuple[str, ...] = ("noise", "blur", "contrast", "rotation")


def corrupt(images: torch.Tensor, kind: str, severity: float, seed: int = 0) -> torch.Tensor:
    """Return a corrupted copy of ``images`` (n, C, H, W) in [0, 1]."""
    if images.ndim != 4:
        raise ValueError(f"images must be (n, C, H, W), got shape {tuple(images.shape)}")
    if kind not in SHIFTS:
        raise ValueError(f"unknown shift {kind!r}; known: {SHIFTS}")
    if not math.isfinite(severity):
        raise ValueError(f"severity must be finite, got {severity}")
    if kind == "noise":
        if severity < 0:
            raise ValueError(f"noise severity is a standard deviation >= 0, got {severity}")
        gen = torch.Generator().manual_seed(seed)
        eps = torch.randn(images.shape, generator=gen, dtype=images.dtype).to(images.device)
        return (images + severity * eps).clamp(0.0, 1.0)
    if kind == "blur":
        if severity <= 0:
            raise ValueError(f"blur severity is a standard deviation > 0, got {severity}")
        size = 2 * math.ceil(3 * severity) + 1
        return F.gaussian_blur(images, [size, size], [severity, severity])
    if kind == "contrast":
        if not 0 < severity <= 1:
            raise ValueError(f"contrast severity must be in (0, 1], got {severity}")
        mean = images.mean(dim=(1, 2, 3), keepdim=True)
        return (mean + severity * (images - mean)).clamp(0.0, 1.0)
    return F.rotate(images, severity, interpolation=InterpolationMode.BILINEAR)
