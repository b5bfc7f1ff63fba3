"""The weights' own preprocessing as data: resize, centre crop, scale to [0, 1], normalise.

Every classification weights in torchvision and timm evaluates with the same four steps and differs
only in the numbers, so one frozen spec covers them all. Keeping it as data (not a transform object)
lets the feature cache key on it, the API show it, and the pipeline split it in two: the geometric part
runs per image in data-loading workers on uint8 pixels, the arithmetic part runs per batch on the device.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# Bounds every size a spec declares before an image of that size is allocated (crop, resize).
MAX_SIDE = 2048

Interpolation = Literal["nearest", "bilinear", "bicubic"]


class Preprocess(BaseModel):
    """Before the centre crop, ``resize`` sets the shorter side (an int, aspect kept) or both sides
    (``(height, width)``); ``None`` resizes straight to ``crop``."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    channels: Literal[1, 3] = 3
    crop: tuple[int, int] = (224, 224)
    resize: int | tuple[int, int] | None = 256
    interpolation: Interpolation = "bilinear"
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    antialias: bool = True

    @model_validator(mode="after")
    def _check(self) -> Preprocess:
        if len(self.mean) != self.channels or len(self.std) != self.channels:
            raise ValueError(f"mean and std need {self.channels} values, one per channel")
        sizes = () if self.resize is None else (self.resize,) if isinstance(self.resize, int) else self.resize
        too_small = min(self.crop) < 1 or any(size < 1 for size in sizes)
        if too_small or any(s <= 0 for s in self.std):
            raise ValueError("std, crop and resize must be positive")
        if max(self.crop) > MAX_SIDE or any(size > MAX_SIDE for size in sizes):
            raise ValueError(f"crop and resize are at most {MAX_SIDE} pixels a side")
        return self


# Named specs for ``zootriage export --preset``: torchvision's ImageNet evaluation, and MNIST's
# usual normalisation (28×28 grey, the training set's mean and std of pixels in [0, 1]).
PRESETS = {
    "imagenet": Preprocess(),
    "mnist": Preprocess(channels=1, crop=(28, 28), resize=None, mean=(0.1307,), std=(0.3081,)),
}


def from_torchvision(transforms: Any) -> Preprocess:
    """Read the numbers off a torchvision ``ImageClassification`` transform (``weights.transforms()``)."""
    crop = list(transforms.crop_size)
    resize = list(transforms.resize_size)
    return Preprocess(
        crop=(crop[0], crop[-1]),
        resize=resize[0],
        interpolation=transforms.interpolation.value,
        mean=tuple(transforms.mean),
        std=tuple(transforms.std),
        antialias=bool(transforms.antialias),
    )


def from_timm(config: dict[str, Any]) -> Preprocess:
    """From timm's resolved data config: the eval transform resizes to ``floor(size / crop_pct)`` (the
    shorter side for a square input with ``crop_mode="center"``, else both sides) and centre-crops."""
    channels, height, width = config["input_size"]
    crop_pct = config.get("crop_pct") or 1.0
    scaled = (math.floor(height / crop_pct), math.floor(width / crop_pct))
    square = height == width and config.get("crop_mode", "center") == "center"
    interpolation = config.get("interpolation", "bilinear")
    return Preprocess(
        channels=channels,
        crop=(height, width),
        resize=scaled[0] if square else scaled,
        interpolation=interpolation if interpolation in ("nearest", "bilinear", "bicubic") else "bilinear",
        mean=tuple(config["mean"]),
        std=tuple(config["std"]),
    )
