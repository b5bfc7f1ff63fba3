"""Marker records and triage rules: what the verdict, the ranking and the gates read and apply.

A rule names what "better" means (``make_rule``): ``geometry``, the paper's selection rule (among
weights of one architecture prefer higher D_eff, marker ``dimension``, AND higher Ψ_eff, marker
``utilization``), or one marker with a preferred direction (``id_accuracy``, ``logme``, ...).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from zootriage.core.catalogue.markers import get_marker
from zootriage.core.noise import TEST, Estimate

DIMENSION = "dimension"
UTILIZATION = "utilization"
GEOMETRY = (DIMENSION, UTILIZATION)
ID_ACCURACY = "id_accuracy"
LOGME = "logme"


class UnknownRule(ValueError):
    """A triage rule that names no marker, or a marker with no preferred direction."""


@dataclass(frozen=True)
class MarkerRecord:
    """The markers of one scored model: ``values[name]`` is None when the marker did not apply;
    ``stds[name]`` the standard deviation over the ``repeats`` repeats (GLUE's, or the marker's
    spread over the same per-class subsets, ``core.markers.compute``; None: no noise estimate);
    ``undecidable[name]`` the reason a marker may not decide (a degenerate GLUE regime);
    ``published[name]`` a value that was not measured on the run's images but taken from the weights'
    metadata, with its own standard error (``core.triage.published``), which replaces ``values[name]``;
    ``notes[name]`` what a decidable marker's std measures when not plain disjoint repeats (overlapping
    repeats, ``core.glue_subsets``)."""

    name: str
    values: Mapping[str, float | None]
    stds: Mapping[str, float | None] = field(default_factory=dict)
    repeats: int = 1
    undecidable: Mapping[str, str] = field(default_factory=dict)
    published: Mapping[str, Estimate] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)

    def value(self, marker: str) -> float | None:
        if marker in self.published:
            return self.published[marker].value
        value = self.values.get(marker)
        return None if value is None or not math.isfinite(value) else float(value)

    def estimate(self, marker: str) -> Estimate | None:
        """The value with its standard error std/√repeats. Every marker is a function of the sampled
        images, so none is exact: a marker stored without a std (one repeat, draws-only subsets, a
        run stored before every marker carried one) has no noise estimate and never decides. A
        published value carries the standard error of its own test set."""
        if marker in self.published:
            return self.published[marker]
        value = self.value(marker)
        if value is None:
            return None
        return Estimate.from_repeats(value, self.stds.get(marker), self.repeats)


@dataclass(frozen=True)
class Rule:
    """What "better" means: every marker in ``markers`` must prefer the candidate beyond the noise."""

    name: str
    markers: tuple[str, ...]
    higher_is_better: tuple[bool, ...]
    # Set when no one named the rule: why it is the product's default (``core.defaults``).
    default_reason: str | None = None

    def describe(self) -> str:
        wanted = " and ".join(
            f"{'higher' if h else 'lower'} {m}"
            for m, h in zip(self.markers, self.higher_is_better, strict=True)
        )
        return f"{self.name}: {wanted}, each beyond the noise ({TEST})"


def make_rule(name: str) -> Rule:
    """``geometry`` (D_eff and Ψ_eff both higher) or the name of a marker with a preferred direction."""
    if name == "geometry":
        return Rule("geometry", GEOMETRY, (True, True))
    try:
        spec = get_marker(name)
    except ValueError as exc:
        raise UnknownRule(f"unknown triage rule {name!r}: use 'geometry' or a marker name ({exc})") from None
    if spec.higher_is_better is None:
        raise UnknownRule(f"marker {name!r} has no preferred direction, so it cannot rank or decide")
    return Rule(name, (name,), (spec.higher_is_better,))


GEOMETRY_RULE = make_rule("geometry")
