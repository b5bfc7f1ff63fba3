"""torchvision's model registry as plain data (``torchvision.json``): what the API needs to check a
reference (``core.zoo.checks``) and to list the v1/v2 pairs, without importing torchvision.

Each architecture maps to its weights enum: every member's name, the file name torch hub caches it
under (the basename of its URL, as ``weights.get_state_dict()`` stores it), its published ImageNet-1K
acc@1, parameter count and number of categories, and which member ``DEFAULT`` names.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from zootriage.core.catalogue.files import load
from zootriage.core.errors import UnknownModel

V1, V2 = "IMAGENET1K_V1", "IMAGENET1K_V2"


@dataclass(frozen=True)
class WeightsPair:
    """An architecture with both IMAGENET1K_V1 and IMAGENET1K_V2 weights (the paper's v1/v2 pairs)."""

    arch: str
    v1_acc1: float
    v2_acc1: float


@dataclass(frozen=True)
class WeightsInfo:
    """One member of an architecture's weights enum."""

    name: str
    file: str
    acc1: float | None
    num_params: int | None
    num_categories: int


def _architectures() -> dict[str, Any]:
    architectures: dict[str, Any] = load("torchvision")["architectures"]
    return architectures


def has_architecture(arch: str) -> bool:
    """Whether torchvision builds ``arch`` (``torchvision.models.get_model_builder`` accepts it)."""
    return arch in _architectures()


def is_classifier(arch: str) -> bool:
    """Whether ``arch`` is one of torchvision's classification models
    (``torchvision.models.list_models(module=torchvision.models)``)."""
    entry = _architectures().get(arch)
    return entry is not None and bool(entry["classification"])


def weights_info(arch: str, weights: str) -> WeightsInfo:
    """The member ``weights`` of ``arch``'s enum (``DEFAULT`` resolves to the member it names), or
    ``UnknownModel`` as ``core.zoo.torchvision_zoo.weights_enum`` raises it."""
    entry = _architectures().get(arch)
    if entry is None or not entry["weights"]:
        raise UnknownModel(f"torchvision has no architecture {arch!r}")
    name = entry["default"] if weights == "DEFAULT" and entry["default"] else weights
    if name not in entry["weights"]:
        names = ", ".join(entry["weights"])
        raise UnknownModel(f"torchvision {arch} has no weights {weights!r} (it has {names})")
    return WeightsInfo(name=name, **entry["weights"][name])


@cache
def v1_v2_pairs() -> tuple[WeightsPair, ...]:
    """Every classification architecture with both IMAGENET1K_V1 and IMAGENET1K_V2, with their acc@1,
    in torchvision's order (``core.zoo.torchvision_zoo.v1_v2_pairs`` on the installed library)."""
    pairs = []
    for arch, entry in _architectures().items():
        members = entry["weights"]
        if entry["classification"] and V1 in members and V2 in members:
            pairs.append(WeightsPair(arch, members[V1]["acc1"], members[V2]["acc1"]))
    return tuple(pairs)
