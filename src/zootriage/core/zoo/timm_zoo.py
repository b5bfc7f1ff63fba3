"""timm models: any ``timm.list_models()`` name with an optional pretrained tag.

Weights are looked up where timm keeps them (the Hugging Face cache for ``hf_hub_id`` configs, torch
hub's cache for ``url`` configs; ``core.zoo.weight_caches``) and read by our own safe loader, so their
sha256 is known.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import timm
from timm.models import get_pretrained_cfg
from torch import nn

from zootriage.core.errors import UnknownModel
from zootriage.core.zoo.preprocess import Preprocess, from_timm
from zootriage.core.zoo.weight_caches import pretrained_file


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


def _weights_file(cfg: dict[str, Any], download: bool) -> Path:
    url = cfg.get("url")
    return pretrained_file(
        f"{cfg.get('architecture')}.{cfg.get('tag')}",
        cfg.get("hf_hub_id"),
        cfg.get("hf_hub_filename"),
        os.path.basename(url) if url else None,
        download,
    )
