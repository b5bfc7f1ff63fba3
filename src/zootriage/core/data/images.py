"""An indexable set of labelled images, and the loaders that fetch and decode image ``i``.

Sources only say how to fetch image ``i``; nothing is decoded until a sampled index is asked for, so
memory stays bounded by the batch. Fitting a decoded image to a model's input is
:mod:`core.data.fitting`'s. torch and torchvision are imported where an image is decoded, not here: the
API checks a dataset reference with these classes and never decodes an image.
"""

from __future__ import annotations

import io
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from PIL import Image

from zootriage.core.errors import BadImage

if TYPE_CHECKING:
    import torch

Picture: TypeAlias = "Image.Image | np.ndarray | torch.Tensor"  # a tensor is uint8 (C, H, W)
_TORCH_DECODES = ("JPEG", "PNG", "WEBP")
DEFAULT_MAX_PIXELS = 50_000_000  # refuse decompression bombs before decoding (PIL reads the size first)
# The image suffixes datasets may hold, each with the PIL formats its file is opened as: its own format
# only, so bytes of another format (ICO, which decodes inside ``Image.open``; EPS, which runs
# Ghostscript; any other PIL plugin) are never parsed. A JPEG, PNG or WebP file may hold either of the
# other two (real datasets hold such misnamed files, ImageNet a PNG named .JPEG): their headers are read
# without decoding, and torchvision decodes them.
_WEB = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP"}
SUFFIX_FORMATS: dict[str, tuple[str, ...]] = {
    **{suffix: (own, *(f for f in _TORCH_DECODES if f != own)) for suffix, own in _WEB.items()},
    ".bmp": ("BMP",),
    ".tif": ("TIFF",),
    ".tiff": ("TIFF",),
    ".ppm": ("PPM",),  # PIL's PPM plugin reads the whole netpbm family, PGM included
    ".pgm": ("PPM",),
}


@dataclass(frozen=True)
class ImageSet:
    """``labels[i]`` is the class index of image ``i``, ``classes[k]`` the name of class ``k``.

    ``identity`` is JSON-able and names the content (package and version, archive sha256, folder path);
    ``file_bytes`` (file-backed sets) returns an image's encoded bytes so the fingerprint can cover the
    sampled content itself.
    """

    labels: np.ndarray
    classes: tuple[str, ...]
    label_space: str | None
    identity: dict[str, Any]
    loader: Callable[[int], Picture]
    file_bytes: Callable[[int], bytes] | None = field(default=None)

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class ArrayLoader:
    """Images held in one uint8 array (n, H, W) or (n, H, W, C)."""

    images: np.ndarray

    def __call__(self, index: int) -> Picture:
        return self.images[index]


@dataclass(frozen=True)
class FileLoader:
    paths: tuple[Path, ...]
    max_pixels: int = DEFAULT_MAX_PIXELS

    def __call__(self, index: int) -> Picture:
        return decode(self.read(index), str(self.paths[index].name), self.max_pixels)

    def read(self, index: int) -> bytes:
        return self.paths[index].read_bytes()


class ZipLoader:
    """Members of a zip archive, each read with its (already checked) decompressed size as a bound.

    The archive is opened lazily, once per process, so the loader pickles into data-loading workers.
    """

    def __init__(self, path: Path, members: tuple[zipfile.ZipInfo, ...], max_pixels: int) -> None:
        self.path = path
        self.members = members
        self.max_pixels = max_pixels
        self._zip: zipfile.ZipFile | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_zip": None}

    def read(self, index: int) -> bytes:
        if self._zip is None:
            self._zip = zipfile.ZipFile(self.path)
        info = self.members[index]
        with self._zip.open(info) as member:
            return member.read(info.file_size)

    def __call__(self, index: int) -> Picture:
        return decode(self.read(index), self.members[index].filename, self.max_pixels)


def pixel_levels(x: np.ndarray, scale: float) -> np.ndarray:
    """``clip(rint(x * scale), 0, 255)`` as uint8: the same values as that expression, computed in
    ``x``'s own buffer where ``x`` is a writeable float array (it is overwritten; pass only arrays the
    caller owns), else in one float64 copy; the expression's three array-sized temporaries cost
    0.1-0.3 s on MNIST's 55 M pixels (more where their pages are new to the process), this 0.05 s
    (2-core build machine)."""
    if x.dtype.kind != "f" or not x.flags.writeable:
        x = x.astype(np.float64)
    np.multiply(x, scale, out=x)
    np.rint(x, out=x)
    np.clip(x, 0, 255, out=x)
    return x.astype(np.uint8)


def decode(data: bytes, name: str, max_pixels: int) -> Picture:
    """RGB uint8 (3, H, W) for JPEG, PNG and WebP (torchvision's decoders: about twice PIL's speed, and
    the tensor resize that follows is faster too); BMP, TIFF and netpbm through PIL.

    The file is opened only as the format(s) its suffix names (``SUFFIX_FORMATS``), whose PIL plugins
    read just the header in ``Image.open``; so an image over ``max_pixels`` is refused before anything
    is decoded. PIL's own decompression-bomb bound (a warning, then an error, past
    ``Image.MAX_IMAGE_PIXELS``) is a refusal too, never a warning.
    """
    formats = SUFFIX_FORMATS.get(PurePosixPath(name).suffix.lower())
    if formats is None:
        raise BadImage(f"{name}: not an image file name (expected one of {', '.join(SUFFIX_FORMATS)})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=formats)
        if image.width * image.height > max_pixels:
            raise BadImage(f"{name}: {image.width}×{image.height} pixels is over the {max_pixels} limit")
        if image.format in _TORCH_DECODES:
            import torch
            from torchvision.io import ImageReadMode, decode_image

            with warnings.catch_warnings():  # deprecated in favour of TorchCodec; pinned torchvision has it
                warnings.simplefilter("ignore", DeprecationWarning)
                pixels = torch.frombuffer(bytearray(data), dtype=torch.uint8)
                return decode_image(pixels, mode=ImageReadMode.RGB)
        image.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise BadImage(f"{name}: over the pixel limit ({exc})") from exc
    except (OSError, RuntimeError, SyntaxError) as exc:
        kinds = formats[0] if len(formats) == 1 else f"{', '.join(formats[:-1])} or {formats[-1]}"
        raise BadImage(f"{name}: not a readable {kinds} image ({exc})") from exc
    return image
