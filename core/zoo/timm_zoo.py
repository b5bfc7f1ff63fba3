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
from torch import nn

from core.errors import UnknownModel, WeightsNotAvailable
from core.zoo.preprocess import Preprocess, from_timm

_HF_FILES = ("model.safetensors", "pytorch_model.bin")


def build(name: str) -> nn.Module:
    """``name`` (``arch`` or ``arch.tag``) with random weights; the tag selects the pretrained config."""
    arch = name.partition(".")[0]
    if not timm.is_model(arch):
        raise UnknownModel(f"timm has no model {arch!r}")
    if "." in name and name not in timm.list_pretrained(arch + ".*"):
        tags = ", ".join(timm.list_pretrained(arch + ".*")) or "none"
        raise UnknownModel(f"timm has no pretrained tag {name!r} (known: {tags})")
    model: nn.Module = timm.create_model(name, pretrained=False)
    return model


def preprocess(model: nn.Module) -> Preprocess:
    return from_timm(timm.data.resolve_model_data_config(model))


def head_name(model: nn.Module) -> str:
    """Qualified name of the classifier returned by timm's ``get_classifier()``."""
    classifier = model.get_classifier()  # type: ignore[operator]
    return next(name for name, module in model.named_modules() if module is classifier)


def weights_file(model: nn.Module) -> Path:
    """The cached pretrained file for the model's config, or ``WeightsNotAvailable``."""
    cfg: dict[str, Any] = model.pretrained_cfg  # type: ignore[assignment]
    name = f"{cfg.get('architecture')}.{cfg.get('tag')}"
    hub_id = cfg.get("hf_hub_id")
    if hub_id:
        named = cfg.get("hf_hub_filename")
        found = _hf_file(hub_id, (named, *_HF_FILES) if named else _HF_FILES)
        if found is not None:
            return found
    url = cfg.get("url")
    if url:
        path = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(url)
        if path.is_file():
            return path
    raise WeightsNotAvailable(f"timm weights {name} are not in the local caches (HF hub or torch hub)")


def _hf_file(hub_id: str, filenames: tuple[str, ...]) -> Path | None:
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    for filename in filenames:
        cached = try_to_load_from_cache(hub_id, filename)
        if isinstance(cached, str):
            return Path(cached)
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
        return None
    for filename in filenames:
        try:
            return Path(hf_hub_download(hub_id, filename))
        except (LocalEntryNotFoundError, HFValidationError, OSError):
            continue
    return None
