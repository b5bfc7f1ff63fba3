"""The per-image half of the weights' preprocessing: a decoded image fitted to the model's input.

The geometric steps (channel conversion, resize, centre crop) run here, per image, in data-loading
workers, on uint8 pixels; the arithmetic steps (scale to [0, 1], normalise) run per batch on the device
(``core.features``).
"""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2 import functional as F

from zootriage.core.data.images import ImageSet, Picture
from zootriage.core.zoo.preprocess import Preprocess


def fit(picture: Picture, pre: Preprocess) -> torch.Tensor:
    """uint8 (C, H, W) at the model's crop size: channels converted, resized, centre-cropped."""
    if isinstance(picture, Image.Image):
        tensor = F.pil_to_tensor(picture.convert("L" if pre.channels == 1 else "RGB"))
    elif isinstance(picture, torch.Tensor):
        tensor = _match_channels(picture, pre.channels)
    else:
        tensor = _array_to_chw(picture, pre.channels)
    interpolation = InterpolationMode(pre.interpolation)
    if pre.resize is None:
        if tuple(tensor.shape[-2:]) != pre.crop:
            tensor = F.resize(tensor, list(pre.crop), interpolation=interpolation, antialias=pre.antialias)
        return tensor
    size = [pre.resize] if isinstance(pre.resize, int) else list(pre.resize)
    tensor = F.resize(tensor, size, interpolation=interpolation, antialias=pre.antialias)
    return F.center_crop(tensor, list(pre.crop))


def _array_to_chw(array: np.ndarray, channels: int) -> torch.Tensor:
    # an image of a mapped, read-only set (core.data.mapped) is copied: torch must not share memory
    # it could write
    tensor = torch.from_numpy(np.ascontiguousarray(array) if array.flags.writeable else np.array(array))
    return _match_channels(tensor[None] if tensor.ndim == 2 else tensor.permute(2, 0, 1), channels)


def _match_channels(tensor: torch.Tensor, channels: int) -> torch.Tensor:
    """Grey to RGB by repeating, RGB to grey by ITU-R 601 luma (as PIL's ``convert("L")``)."""
    tensor = tensor[:3]  # drop an alpha channel
    if tensor.shape[0] == 1 and channels == 3:
        return tensor.expand(3, -1, -1).contiguous()
    if tensor.shape[0] == 3 and channels == 1:
        return F.rgb_to_grayscale(tensor)
    return tensor


class FittedImages(torch.utils.data.Dataset[tuple[torch.Tensor, int]]):
    """The sampled images of an :class:`ImageSet`, fitted to the model's input size."""

    def __init__(self, images: ImageSet, indices: np.ndarray, preprocess: Preprocess) -> None:
        self.images = images
        self.indices = indices
        self.preprocess = preprocess

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, position: int) -> tuple[torch.Tensor, int]:
        index = int(self.indices[position])
        return fit(self.images.loader(index), self.preprocess), int(self.images.labels[index])
