"""Model sources (torchvision, timm, uploaded checkpoints) -> a module returning (penultimate, logits)."""

from core.zoo.loader import LoadedModel, ModelInfo, load_model
from core.zoo.preprocess import Preprocess
from core.zoo.refs import (
    CheckpointRef,
    ModelRef,
    TimmRef,
    TorchvisionRef,
    parse_model_ref,
    validate_model_ref,
)
from core.zoo.torchvision_zoo import WeightsPair, v1_v2_pairs

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
