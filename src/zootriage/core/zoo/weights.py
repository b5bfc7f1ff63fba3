"""Reading weights files safely, and naming them by content.

A weights file is identified by the sha256 of its bytes, whatever way it was reached (a torch hub cache
entry, a Hugging Face cache entry, an upload): the run key and the feature cache use that identity, and
torchvision does not check the hashes of files already in its cache, so we hash ourselves.

Loading never executes code from the file: ``.safetensors`` holds tensors only, and ``.pt``/``.pth``/
``.bin`` go through ``torch.load(weights_only=True)``, which refuses pickled globals outside tensors and
plain containers. Each way a file can be unusable is its own error (see ``core.errors``). An upload
reaches ``torch.load`` only as the static check's canonical rewrite (``core.zoo.loader._checked``).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from zootriage.core.errors import CheckpointNeedsCode, NotACheckpoint, TruncatedCheckpoint
from zootriage.core.zoo.archive_check import check_file

if TYPE_CHECKING:
    import torch

_HASHES: dict[tuple[str, int, int], str] = {}
_WRAPPER_KEYS = ("state_dict", "model_state_dict", "model", "module")


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file's bytes, memoised on (real path, size, mtime) for this process."""
    real = os.path.realpath(path)
    st = os.stat(real)
    key = (real, st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with open(real, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """Tensors by parameter name from a ``.safetensors`` or a torch-saved state_dict.

    A ``{"state_dict": {...}}``-style wrapper is unwrapped and a DataParallel ``module.`` prefix dropped,
    because training scripts save both shapes and the user should not need to re-save.
    """
    path = Path(path)
    if not path.is_file():
        raise NotACheckpoint(f"{path.name}: no such file")
    tensors = _read_safetensors(path) if path.suffix == ".safetensors" else _read_torch_pickle(path)
    if not tensors:
        raise NotACheckpoint(f"{path.name}: the file holds no tensors")
    if all(k.startswith("module.") for k in tensors):
        tensors = {k.removeprefix("module."): v for k, v in tensors.items()}
    return tensors


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """The header is checked by hand first (``archive_check``): the library's own errors do not tell a
    truncated file from one that never was a safetensors file."""
    from safetensors.torch import load_file

    check_file(path, path.name)
    try:
        return dict(load_file(str(path)))
    except Exception as exc:
        raise NotACheckpoint(f"{path.name}: unreadable safetensors file ({exc})") from exc


def _read_torch_pickle(path: Path) -> dict[str, torch.Tensor]:
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic[:2] != b"PK" and magic[:1] != b"\x80":
        raise NotACheckpoint(f"{path.name}: not a checkpoint (neither a torch zip nor a pickle)")
    if magic[:2] == b"PK" and not zipfile.is_zipfile(path):
        raise TruncatedCheckpoint(f"{path.name}: the torch zip archive is incomplete (truncated file?)")
    import torch  # here: hashing a file (the API's part) needs no torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        text = str(exc)
        if "weights_only" in text.lower() or "global" in text.lower():
            raise CheckpointNeedsCode(
                f"{path.name}: the pickle needs code to load, refused ({_first_line(text)}); "
                "save model.state_dict() or a .safetensors file instead"
            ) from exc
        raise TruncatedCheckpoint(f"{path.name}: the pickle ends early or is corrupt ({text})") from exc
    except (RuntimeError, EOFError, zipfile.BadZipFile) as exc:
        raise TruncatedCheckpoint(f"{path.name}: unreadable torch file, truncated? ({exc})") from exc
    return _tensor_dict(obj, path.name)


def _tensor_dict(obj: object, name: str) -> dict[str, torch.Tensor]:
    import torch

    if isinstance(obj, Mapping):
        for key in _WRAPPER_KEYS:
            if isinstance(obj.get(key), Mapping):
                return _tensor_dict(obj[key], name)
        if all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()):
            return dict(obj)
        others = sorted({type(v).__name__ for v in obj.values() if not isinstance(v, torch.Tensor)})
        raise NotACheckpoint(f"{name}: not a state_dict (it maps names to {', '.join(others)})")
    raise NotACheckpoint(f"{name}: not a state_dict (a {type(obj).__name__})")


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if "global" in line.lower()]
    return lines[0] if lines else text.splitlines()[0]
