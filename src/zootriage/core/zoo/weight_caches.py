"""Where pretrained files are cached, found without torch: torch hub's folder and the Hugging Face hub.

``torch_hub_dir`` is ``torch.hub.get_dir()`` computed from the same environment (``$TORCH_HOME/hub``,
``TORCH_HOME`` defaulting to ``$XDG_CACHE_HOME/torch``, that to ``~/.cache/torch``); nothing here
calls ``torch.hub.set_dir``. The Hugging Face cache is read without any network call first; a download
is attempted only when asked and ``HF_HUB_OFFLINE`` is not set, so offline machines fail in
milliseconds. The API's static checks (``core.zoo.checks``) and the timm loader (``core.zoo.timm_zoo``)
both look here.
"""

from __future__ import annotations

import os
from pathlib import Path

from zootriage.core.errors import WeightsNotAvailable

HF_FILES = ("model.safetensors", "pytorch_model.bin")


def torch_hub_dir() -> Path:
    """The folder torch hub caches under (``torch.hub.get_dir()`` without importing torch)."""
    home = os.getenv("TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch"))
    return Path(os.path.expanduser(home)) / "hub"


def hub_checkpoint(file_name: str) -> Path:
    """Where torch hub keeps a file downloaded from a URL ending in ``file_name``."""
    return torch_hub_dir() / "checkpoints" / file_name


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on")


def pretrained_file(
    name: str, hf_hub_id: str | None, hf_hub_filename: str | None, url_file: str | None, download: bool
) -> Path:
    """The file of timm's pretrained ``name`` (``arch.tag``): in the Hugging Face cache under
    ``hf_hub_id`` (``hf_hub_filename`` first, then the usual file names), downloaded from there when
    ``download`` and allowed, or torch hub's ``url_file``; ``WeightsNotAvailable`` otherwise."""
    if hf_hub_id:
        files = (hf_hub_filename, *HF_FILES) if hf_hub_filename else HF_FILES
        found = _hf_file(hf_hub_id, files, download)
        if found is not None:
            return found
    if url_file:
        path = hub_checkpoint(url_file)
        if path.is_file():
            return path
    missing = f"timm weights {name} are not in the local caches (HF hub or torch hub)"
    if not download or hub_offline():
        raise WeightsNotAvailable(f"{missing}; downloads are off (HF_HUB_OFFLINE)")
    raise WeightsNotAvailable(f"{missing} and could not be downloaded")


def _hf_file(hub_id: str, filenames: tuple[str, ...], download: bool) -> Path | None:
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    for filename in filenames:
        cached = try_to_load_from_cache(hub_id, filename)
        if isinstance(cached, str):
            return Path(cached)
    if not download or hub_offline():
        return None
    for filename in filenames:
        try:
            return Path(hf_hub_download(hub_id, filename))
        except (LocalEntryNotFoundError, HFValidationError, OSError):
            continue
    return None
