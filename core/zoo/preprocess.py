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

Interpolation = Literal["nearest", "bilinear", "bicubic"]


class Preprocess(BaseModel):
    """``resize`` is the target of the shorter side (``resize_mode="shorter"``) or of both sides
    (``"squash"``) before the centre crop; ``None`` resizes straight to ``crop``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    channels: Literal[1, 3] = 3
    crop: tuple[int, int] = (224, 224)
    resize: int | None = 256
    resize_mode: Literal["shorter", "squash"] = "shorter"
    interpolation: Interpolation = "bilinear"
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    antialias: bool = True

    @model_validator(mode="after")
    def _check(self) -> Preprocess:
        if len(self.mean) != self.channels or len(self.std) != self.channels:
            raise ValueError(f"mean and std need {self.channels} values, one per channel")
        too_small = min(self.crop) < 1 or (self.resize is not None and self.resize < 1)
        if too_small or any(s <= 0 for s in self.std):
            raise ValueError("std, crop and resize must be positive")
        return self


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
    """From timm's resolved data config: the eval transform resizes to ``floor(size / crop_pct)``
    (shorter side for ``crop_mode="center"``, both sides for ``"squash"``) and centre-crops ``size``."""
    channels, height, width = config["input_size"]
    crop_pct = config.get("crop_pct") or 1.0
    scale = math.floor(max(height, width) / crop_pct)
    interpolation = config.get("interpolation", "bilinear")
    return Preprocess(
        channels=channels,
        crop=(height, width),
        resize=scale,
        resize_mode="squash" if config.get("crop_mode") == "squash" else "shorter",
        interpolation=interpolation if interpolation in ("nearest", "bilinear", "bicubic") else "bilinear",
        mean=tuple(config["mean"]),
        std=tuple(config["std"]),
    )
