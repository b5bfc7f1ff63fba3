"""``decode`` opens a file only as the format its suffix names: bytes of another PIL format (an ICO
that decodes inside ``Image.open``, TIFF, EPS that would run Ghostscript) are refused as ``BadImage``
before they are parsed, and every accepted suffix still gives the pixels it gave before."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from PIL import EpsImagePlugin, Image, ImageFile
from torchvision.io import decode_jpeg

from zootriage.core.data.images import DEFAULT_MAX_PIXELS, SUFFIX_FORMATS, decode
from zootriage.core.errors import BadImage

EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n0 0 moveto showpage\n%%EOF\n"

# An ICO whose directory declares one 256×256 icon but embeds a zero-filled PNG of side ``W``: PIL's
# ICO plugin decodes that PNG inside ``Image.open`` (4·W² bytes), before any pixel bound is checked.
# Built and decoded in a fresh process, whose peak RSS (VmHWM) says whether the icon was decoded.
ICO_PROBE = """
import struct, sys, zlib
from zootriage.core.data.images import DEFAULT_MAX_PIXELS, decode
from zootriage.core.errors import BadImage
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
def hwm():
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) >> 10
W = int(sys.argv[1])
z = zlib.compressobj(9)
idat = b"".join(z.compress(b"\\0" * (1 + 4 * W)) for _ in range(W)) + z.flush()
png = (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, W, 8, 6, 0, 0, 0))
       + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
ico = struct.pack("<HHH", 0, 1, 1) + struct.pack("<BBBBHHII", 0, 0, 0, 0, 1, 32, len(png), 22) + png
del idat, z
before = hwm()
try:
    decode(ico, "icon.png", DEFAULT_MAX_PIXELS)
    outcome = "accepted"
except BadImage as exc:
    outcome = "refused " + exc.message
print(hwm() - before, outcome)
"""


def test_an_ico_named_png_is_refused_before_its_icon_is_decoded() -> None:
    side = 4000  # a 64 MB RGBA decode, from a file of about 50 KiB
    out = subprocess.run([sys.executable, "-c", ICO_PROBE, str(side)], capture_output=True, text=True,
                         check=True, timeout=120)
    grown, outcome = out.stdout.split(" ", 1)
    assert int(grown) < 16, f"peak RSS grew {grown} MiB: the icon was decoded"
    assert outcome.startswith("refused icon.png: not a readable PNG, JPEG or WEBP image")


def _bytes(image: Image.Image, fmt: str, **params: object) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **params)
    return out.getvalue()


@pytest.fixture
def no_decode(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every PIL decode (``ImageFile.load``) and every EPS header parse."""
    calls: list[str] = []
    load, eps_open = ImageFile.ImageFile.load, EpsImagePlugin.EpsImageFile._open

    def spy_load(self: ImageFile.ImageFile) -> object:
        calls.append(f"load {self.format}")
        return load(self)

    def spy_eps(self: EpsImagePlugin.EpsImageFile) -> None:
        calls.append("eps")
        eps_open(self)

    monkeypatch.setattr(ImageFile.ImageFile, "load", spy_load)
    monkeypatch.setattr(EpsImagePlugin.EpsImageFile, "_open", spy_eps)
    return calls


def test_tiff_bytes_named_png_are_refused(no_decode: list[str]) -> None:
    tiff = _bytes(Image.new("RGB", (64, 64), (1, 2, 3)), "TIFF")
    with pytest.raises(BadImage, match=r"^bad_image: photo\.png: not a readable PNG, JPEG or WEBP image"):
        decode(tiff, "photo.png", DEFAULT_MAX_PIXELS)
    assert no_decode == []
    assert decode(tiff, "photo.tif", DEFAULT_MAX_PIXELS).getpixel((0, 0)) == (1, 2, 3)  # type: ignore[union-attr]


def test_eps_bytes_named_png_never_reach_the_eps_plugin(no_decode: list[str]) -> None:
    assert Image.open(io.BytesIO(EPS)).format == "EPS"  # what PIL makes of them when asked to guess
    no_decode.clear()
    for name in ("figure.png", "figure.jpg", "figure.tiff", "figure.pgm"):
        with pytest.raises(BadImage, match=rf"^bad_image: {name}: not a readable "):
            decode(EPS, name, DEFAULT_MAX_PIXELS)
    assert no_decode == []


def test_a_name_without_an_image_suffix_is_refused() -> None:
    png = _bytes(Image.new("RGB", (4, 4)), "PNG")
    with pytest.raises(BadImage, match=r"^bad_image: figure\.eps: not an image file name"):
        decode(png, "figure.eps", DEFAULT_MAX_PIXELS)


def test_over_the_pixel_limit_is_refused_from_the_header(no_decode: list[str]) -> None:
    png = _bytes(Image.new("L", (300, 200)), "PNG")
    with pytest.raises(BadImage, match=r"^bad_image: big\.png: 300×200 pixels is over the 10000 limit"):
        decode(png, "big.png", 10_000)
    assert no_decode == []


def _pixels(picture: object) -> np.ndarray:
    if isinstance(picture, torch.Tensor):
        return picture.permute(1, 2, 0).numpy()
    assert isinstance(picture, Image.Image)
    return np.asarray(picture)


def test_every_accepted_suffix_still_decodes_to_the_same_pixels() -> None:
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)
    gray = rgb[..., 0].copy()
    lossless = {"PNG": {}, "WEBP": {"lossless": True}, "BMP": {}, "TIFF": {}, "PPM": {}}
    assert set(SUFFIX_FORMATS) == {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff", ".ppm", ".pgm"}
    for suffix, formats in SUFFIX_FORMATS.items():
        own = formats[0]
        source = gray if suffix == ".pgm" else rgb
        data = _bytes(Image.fromarray(source), own, **lossless.get(own, {"quality": 90}))
        got = _pixels(decode(data, f"x{suffix.upper()}", DEFAULT_MAX_PIXELS))
        if own == "JPEG":  # lossy: the same decoder as before, torchvision's
            with warnings.catch_warnings():  # torchvision's deprecation of its decoders
                warnings.simplefilter("ignore", DeprecationWarning)
                expected = decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8)).permute(1, 2, 0)
            assert np.array_equal(got, expected.numpy()), suffix
        else:
            assert np.array_equal(got, source), suffix
    # a PNG named .jpg (as in ImageNet) still decodes, as JPEG, PNG and WebP did before
    png = _bytes(Image.fromarray(rgb), "PNG")
    assert np.array_equal(_pixels(decode(png, "n02105855_2933.JPEG", DEFAULT_MAX_PIXELS)), rgb)
