"""timm models: any ``timm.list_models()`` name with an optional pretrained tag.

Weights are looked up where timm keeps them (the Hugging Face cache for ``hf_hub_id`` configs, torch
hub's cache for ``url`` configs) and read by our own safe loader, so their sha256 is known. The Hugging
Face cache is checked without any network call first; a download is attempted only when
``HF_HUB_OFFLINE`` is not set, so offline machines fail in milliseconds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import timm
import torch
from timm.models import get_pretrained_cfg
from torch import nn

from zootriage.core.errors import UnknownModel, WeightsNotAvailable
from zootriage.core.zoo.preprocess import Preprocess, from_timm

_HF_FILES = ("model.safetensors", "pytorch_model.bin")


def check_name(name: str) -> str:
    """``name`` with its pretrained tag made explicit (``resnet50`` -> ``resnet50.a1_in1k``, timm's
    default), or ``UnknownModel``; static: nothing is built."""
    arch = name.partition(".")[0]
    if not timm.is_model(arch):
        raise UnknownModel(f"timm has no model {arch!r}")
    if "." in name and name not in timm.list_pretrained(arch + ".*"):
        tags = ", ".join(timm.list_pretrained(arch + ".*")) or "none"
        raise UnknownModel(f"timm has no pretrained tag {name!r} (known: {tags})")
    cfg = get_pretrained_cfg(name)
    return f"{arch}.{cfg.tag}" if cfg is not None and cfg.tag else name


def build(name: str) -> nn.Module:
    """``name`` (``arch`` or ``arch.tag``) with random weights; the tag selects the pretrained config."""
    check_name(name)
    model: nn.Module = timm.create_model(name, pretrained=False)
    return model


def preprocess(model: nn.Module) -> Preprocess:
    return from_timm(timm.data.resolve_model_data_config(model))


def head_name(model: nn.Module) -> str:
    """Qualified name of the classifier returned by timm's ``get_classifier()``."""
    classifier = model.get_classifier()  # type: ignore[operator]
    return next(name for name, module in model.named_modules() if module is classifier)


def weights_file(model: nn.Module) -> Path:
    """The cached pretrained file for the model's config (downloaded when allowed), or
    ``WeightsNotAvailable``."""
    cfg: dict[str, Any] = model.pretrained_cfg  # type: ignore[assignment]
    return _weights_file(cfg, download=True)


def cached_weights_file(name: str) -> Path:
    """The pretrained file of ``name`` if it is already in a local cache: no model built, no network."""
    cfg = get_pretrained_cfg(check_name(name))
    if cfg is None:
        raise WeightsNotAvailable(f"timm has no pretrained weights for {name!r}")
    return _weights_file(cfg.to_dict(), download=False)


def _weights_file(cfg: dict[str, Any], download: bool) -> Path:
    name = f"{cfg.get('architecture')}.{cfg.get('tag')}"
    hub_id = cfg.get("hf_hub_id")
    if hub_id:
        named = cfg.get("hf_hub_filename")
        found = _hf_file(hub_id, (named, *_HF_FILES) if named else _HF_FILES, download)
        if found is not None:
            return found
    url = cfg.get("url")
    if url:
        path = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(url)
        if path.is_file():
            return path
    missing = f"timm weights {name} are not in the local caches (HF hub or torch hub)"
    if not download or _hub_offline():
        raise WeightsNotAvailable(f"{missing}; downloads are off (HF_HUB_OFFLINE)")
    raise WeightsNotAvailable(f"{missing} and could not be downloaded")


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on")


def _hf_file(hub_id: str, filenames: tuple[str, ...], download: bool) -> Path | None:
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    for filename in filenames:
        cached = try_to_load_from_cache(hub_id, filename)
        if isinstance(cached, str):
            return Path(cached)
    if not download or _hub_offline():
        return None
    for filename in filenames:
        try:
            return Path(hf_hub_download(hub_id, filename))
        except (LocalEntryNotFoundError, HFValidationError, OSError):
            continue
    return None
