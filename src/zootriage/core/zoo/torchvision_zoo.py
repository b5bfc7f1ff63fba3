"""torchvision weights through its weights API: the enum gives the file URL, transforms and metadata."""

from __future__ import annotations

import os
import urllib.error
from pathlib import Path
from typing import Any

import torch
import torchvision
from torch import nn
from torchvision.models import WeightsEnum

from zootriage.core.catalogue.torchvision import WeightsPair
from zootriage.core.errors import UnknownModel, WeightsNotAvailable
from zootriage.core.zoo.weight_caches import hub_checkpoint


def weights_enum(arch: str, weights: str) -> WeightsEnum:
    """The enum member ``arch``'s ``weights`` (``DEFAULT`` resolves to the named member)."""
    try:
        enum = torchvision.models.get_model_weights(arch)
    except (ValueError, KeyError) as exc:
        raise UnknownModel(f"torchvision has no architecture {arch!r}") from exc
    try:
        member: WeightsEnum = enum[weights]
    except KeyError as exc:
        names = ", ".join(m.name for m in enum)
        raise UnknownModel(f"torchvision {arch} has no weights {weights!r} (it has {names})") from exc
    return member


def build(arch: str, num_classes: int) -> nn.Module:
    """The architecture with random weights and ``num_classes`` outputs."""
    try:
        model: nn.Module = torchvision.models.get_model(arch, weights=None, num_classes=num_classes)
    except ValueError as exc:
        raise UnknownModel(f"torchvision has no architecture {arch!r}") from exc
    return model


def cache_path(weights: WeightsEnum) -> Path:
    """Where torch hub keeps ``weights`` (``$TORCH_HOME/hub/checkpoints/`` + the URL's basename, the
    path ``weights.get_state_dict()`` uses), so files placed there by torchvision, by hand, or by an
    image build all count."""
    return hub_checkpoint(os.path.basename(weights.url))


def weights_file(weights: WeightsEnum) -> Path:
    """The local file of ``weights``: torch hub's cache entry, downloaded if missing and reachable."""
    path = cache_path(weights)
    if not path.is_file():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.hub.download_url_to_file(weights.url, str(path), progress=False)
        except (urllib.error.URLError, OSError) as exc:
            raise WeightsNotAvailable(
                f"weights {weights} are not in {path.parent} and cannot be downloaded ({exc})"
            ) from exc
    return path


def metadata(weights: WeightsEnum) -> dict[str, Any]:
    meta = weights.meta
    return {
        "acc1": meta.get("_metrics", {}).get("ImageNet-1K", {}).get("acc@1"),
        "num_params": meta.get("num_params"),
        "num_categories": len(meta.get("categories") or ()),
    }


def v1_v2_pairs() -> list[WeightsPair]:
    """Every classification architecture with both IMAGENET1K_V1 and IMAGENET1K_V2, with their acc@1."""
    pairs = []
    for arch in torchvision.models.list_models(module=torchvision.models):
        members = torchvision.models.get_model_weights(arch).__members__
        if "IMAGENET1K_V1" in members and "IMAGENET1K_V2" in members:
            pairs.append(
                WeightsPair(
                    arch,
                    metadata(members["IMAGENET1K_V1"])["acc1"],
                    metadata(members["IMAGENET1K_V2"])["acc1"],
                )
            )
    return pairs
