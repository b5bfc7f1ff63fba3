"""The models of a sweep, from how a user asks for them: a list, the v1/v2 preset, or a timm filter.

Expansion only names models (torchvision's weights enums as published in ``core.catalogue``, timm's
registry of pretrained tags, which a timm filter imports timm for): nothing is built, hashed or
downloaded here. Every expansion is bounded by ``limit`` before its references are made, and a
selection that names nothing is refused, so a sweep always has 1 to ``limit`` models.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from zootriage.core.catalogue.torchvision import v1_v2_pairs
from zootriage.core.errors import BadReference, ZooError
from zootriage.core.zoo.refs import AnyModelRef, TorchvisionRef, validate_model_ref

V1, V2 = "IMAGENET1K_V1", "IMAGENET1K_V2"
PRESETS = ("v1v2",)
# fnmatch's alphabet over timm names (``arch.tag``): letters, digits, ``_-.`` and ``*?[]!``.
TIMM_FILTER = r"^[A-Za-z0-9_\-.*?\[\]!]{1,100}$"


class TooManyModels(ZooError):
    """A sweep selection naming more models than one sweep may score."""

    code = "too_many_models"


class NoModels(ZooError):
    """A sweep selection naming no model (a timm filter that matches nothing)."""

    code = "no_models"


def _bounded(refs: Sequence[AnyModelRef], limit: int, what: str) -> list[AnyModelRef]:
    if not refs:
        raise NoModels(f"{what} names no model")
    if len(refs) > limit:
        raise TooManyModels(f"{what} names {len(refs)} models; a sweep scores at most {limit}")
    return list(refs)


def listed(models: Sequence[AnyModelRef], limit: int) -> list[AnyModelRef]:
    """An explicit list, as given."""
    return _bounded(models, limit, "the list")


def v1_v2_preset(limit: int) -> list[AnyModelRef]:
    """Every torchvision architecture with both IMAGENET1K_V1 and IMAGENET1K_V2 (``v1_v2_pairs``, from
    the published catalogue), V1 then V2 of each, architectures in alphabetical order."""
    archs = sorted(pair.arch for pair in v1_v2_pairs())
    if 2 * len(archs) > limit:
        raise TooManyModels(f"the v1v2 preset names {2 * len(archs)} models; a sweep scores at most {limit}")
    refs: list[AnyModelRef] = [TorchvisionRef(arch=arch, weights=w) for arch in archs for w in (V1, V2)]
    return _bounded(refs, limit, "the v1v2 preset")


def timm_filter(pattern: str, limit: int) -> list[AnyModelRef]:
    """timm's pretrained names matching ``pattern`` (``timm.list_pretrained``, fnmatch rules, e.g.
    ``resnet50.*``), in timm's order. Names only: whether their weights are available is checked when
    each job is admitted."""
    if not re.fullmatch(TIMM_FILTER, pattern):
        raise BadReference(f"timm filter {pattern!r}: 1 to 100 characters of letters, digits, _-. and *?[]!")
    import timm

    names = timm.list_pretrained(pattern)
    if len(names) > limit:
        raise TooManyModels(
            f"timm filter {pattern!r} matches {len(names)} pretrained models; a sweep scores at most "
            f"{limit}: narrow the filter"
        )
    refs = [validate_model_ref({"source": "timm", "name": name}) for name in names]
    return _bounded(refs, limit, f"timm filter {pattern!r}")
