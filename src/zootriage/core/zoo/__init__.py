"""Model sources (torchvision, timm, uploaded checkpoints) -> a module returning (penultimate, logits).

Importing the package is light: the references (``refs``) and the preprocessing spec (``preprocess``)
need only pydantic, so the command-line client parses and validates a model reference without torch.
The loaders (``load_model``, the torchvision and timm zoos) import torch, torchvision and timm on first
use of one of their names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zootriage.core.lazy import lazy_names
from zootriage.core.zoo.preprocess import Preprocess
from zootriage.core.zoo.refs import (
    CheckpointRef,
    ModelRef,
    TimmRef,
    TorchvisionRef,
    parse_model_ref,
    validate_model_ref,
)

if TYPE_CHECKING:
    from zootriage.core.zoo.loader import LoadedModel, ModelInfo, load_model
    from zootriage.core.zoo.torchvision_zoo import WeightsPair, v1_v2_pairs

_HEAVY = {
    "LoadedModel": ".loader",
    "ModelInfo": ".loader",
    "load_model": ".loader",
    "WeightsPair": ".torchvision_zoo",
    "v1_v2_pairs": ".torchvision_zoo",
}


__getattr__ = lazy_names(__name__, _HEAVY, globals())


__all__ = [
    "CheckpointRef",
    "LoadedModel",
    "ModelInfo",
    "ModelRef",
    "Preprocess",
    "TimmRef",
    "TorchvisionRef",
    "WeightsPair",
    "load_model",
    "parse_model_ref",
    "v1_v2_pairs",
    "validate_model_ref",
]
