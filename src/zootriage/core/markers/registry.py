"""The marker registry, in the style of timm's ``register_model``.

A marker is a pure function registered with its name, what it needs (``features``, ``labels``,
``logits``), whether higher values are preferred, a short description and a version. Calling
conventions, which ``compute_markers`` follows:

- the function receives its needs as keyword arguments: ``features`` (n, N) float64, ``logits``
  (n, C) float64, ``labels`` (n,) int64. A marker that needs ``labels`` but not ``logits`` receives
  class codes 0..P-1; a marker that needs both reads ``labels`` as column indices of ``logits``.
- group ``"geometry"`` markers share one GLUE analysis: their function receives ``glue`` (a
  ``core.glue.GlueResult``) instead, and their standard deviation over repeats comes with it.
- a function with a ``device`` parameter also receives the ``torch.device`` that ``compute_markers``
  resolved (``core.device.resolve_device``: CUDA when present) and computes there.
- a function returns a float; when its math is undefined on the given data it raises
  ``MarkerUndefined``, which ``compute_markers`` reports as not applicable with the message.
"""

from __future__ import annotations

import fnmatch
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

NEEDS = frozenset({"features", "labels", "logits"})
GROUPS = ("geometry", "representation", "logit", "transferability")

MarkerFn = Callable[..., float]


class MarkerUndefined(ValueError):
    """A marker's definition does not apply to this data (e.g. AUROC when every prediction is right)."""


@dataclass(frozen=True)
class MarkerValue:
    """One computed marker: ``value`` (finite) and optional ``std`` over repeats, or not applicable.

    A marker that does not apply has ``value=None``, ``applicable=False`` and a ``reason``. A marker
    computed in a regime where its number carries no meaning (a degenerate GLUE analysis) keeps its
    value but has ``decidable=False`` and a ``reason``: it is shown, never used to decide. ``std`` is
    None where there is no noise estimate (one GLUE repeat) or no noise (markers outside GLUE).
    """

    value: float | None
    std: float | None = None
    applicable: bool = True
    reason: str | None = None
    decidable: bool = True

    def __post_init__(self) -> None:
        if not self.decidable and not (self.applicable and self.reason):
            raise ValueError("a marker that is not decidable is applicable and has a reason")
        if self.applicable:
            if self.value is None or not math.isfinite(self.value):
                raise ValueError(f"an applicable marker needs a finite value, got {self.value!r}")
            if self.std is not None and not (math.isfinite(self.std) and self.std >= 0):
                raise ValueError(f"std must be a finite non-negative float, got {self.std!r}")
        elif self.value is not None or self.std is not None or not self.reason:
            raise ValueError("a marker that is not applicable has value=None, std=None and a reason")

    @classmethod
    def not_applicable(cls, reason: str) -> MarkerValue:
        return cls(value=None, applicable=False, reason=reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "std": self.std,
            "applicable": self.applicable,
            "reason": self.reason,
            "decidable": self.decidable,
        }


@dataclass(frozen=True)
class MarkerSpec:
    """A registry entry. ``higher_is_better`` is None where the sign of the marker is not a preference."""

    name: str
    fn: MarkerFn
    needs: frozenset[str]
    higher_is_better: bool | None
    description: str
    version: int
    group: str

    @property
    def takes_device(self) -> bool:
        """Whether ``fn`` accepts ``device``, so that ``compute_markers`` passes its device on."""
        return "device" in inspect.signature(self.fn).parameters

    def to_dict(self) -> dict[str, Any]:
        """The metadata, JSON-serialisable (everything but the function)."""
        return {
            "name": self.name,
            "group": self.group,
            "needs": sorted(self.needs),
            "higher_is_better": self.higher_is_better,
            "description": self.description,
            "version": self.version,
        }


_REGISTRY: dict[str, MarkerSpec] = {}


def register_marker(
    *,
    name: str | None = None,
    needs: tuple[str, ...],
    higher_is_better: bool | None,
    description: str,
    group: str,
    version: int = 1,
) -> Callable[[MarkerFn], MarkerFn]:
    """Decorator registering ``fn`` as a marker (its name defaults to the function's name).

    Raises ``ValueError`` for a duplicate name, an unknown need or group, or a bad version.
    """

    def decorate(fn: MarkerFn) -> MarkerFn:
        marker_name = name or fn.__name__
        if marker_name in _REGISTRY:
            raise ValueError(f"marker {marker_name!r} is already registered")
        unknown = sorted(set(needs) - NEEDS)
        if not needs or unknown:
            raise ValueError(f"marker {marker_name!r}: needs must be a non-empty subset of {sorted(NEEDS)}")
        if group not in GROUPS:
            raise ValueError(f"marker {marker_name!r}: group must be one of {GROUPS}, got {group!r}")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"marker {marker_name!r}: version must be an int >= 1, got {version!r}")
        _REGISTRY[marker_name] = MarkerSpec(
            name=marker_name,
            fn=fn,
            needs=frozenset(needs),
            higher_is_better=higher_is_better,
            description=description,
            version=version,
            group=group,
        )
        return fn

    return decorate


def list_markers(filter: str | None = None, *, group: str | None = None) -> list[MarkerSpec]:
    """Registered markers ordered by group (as in ``GROUPS``), then by registration; optionally
    only those whose name matches the glob ``filter`` (e.g. ``"*angle*"``) and/or in ``group``.
    Returns specs; use ``spec.name`` for names."""
    if group is not None and group not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS}, got {group!r}")
    ordered = sorted(_REGISTRY.values(), key=lambda spec: GROUPS.index(spec.group))
    return [
        spec
        for spec in ordered
        if (filter is None or fnmatch.fnmatchcase(spec.name, filter))
        and (group is None or spec.group == group)
    ]


def get_marker(name: str) -> MarkerSpec:
    """The spec registered under ``name``; ``ValueError`` listing the known names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown marker {name!r}; known markers: {sorted(_REGISTRY)}") from None
