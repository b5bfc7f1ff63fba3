"""``compute_markers``: every registered marker on one set of features, labels and logits.

Every marker carries a noise estimate from the same per-class subsets as GLUE's repeats
(``core.glue_subsets.seeded_subsets``). A GLUE marker's std is the spread of its R repeats. A marker
outside GLUE keeps its value on the whole sample and gets, as std, the spread s of its values on the
R subsets (scaled by the subsets' ``inflation``). To first order such a marker is a smooth function
of point averages, so its value on one subset of m points per class has variance σ²/m, and the
whole-sample value on M ≥ R·m points per class has variance σ²/M ≤ s²/R when the subsets are
disjoint: the standard error s/√R that ``core.noise.Estimate.from_repeats`` takes is the GLUE
markers' and is exact (M = R·m, the default sample) or conservative. Overlapping subsets see only
the finite-population part (1 − f)σ²/m of that variance while the whole sample has σ²/M = f σ²/m,
so se² = s² f/(1 − f) = (inflation · s)² / R, the same bound as GLUE's. Subsets that repeat every
point of a class (draws-only), one repeat, a marker undefined on a subset, or the same value on
every subset give no noise estimate (std None): such a marker is shown and never decides. A spread of
0 is not an exact value: a rank capped by the subsets' size (``numerical_rank`` of m·P < D points is at
most m·P − 1 on each subset, whatever the whole sample's) or a proportion without an error on any
subset shows the subsets' limit, not the whole sample's noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from zootriage.core.device import resolve_device
from zootriage.core.errors import CancelCheck, stop_if_cancelled
from zootriage.core.glue import GlueResult, analyze
from zootriage.core.glue_subsets import Noise, seeded_subsets
from zootriage.core.markers.inputs import MarkerInputs, marker_inputs
from zootriage.core.markers.registry import MarkerSpec, MarkerUndefined, MarkerValue, get_marker, list_markers
from zootriage.core.protocol import Protocol


def _not_applicable_reason(spec: MarkerSpec, inputs: MarkerInputs) -> str | None:
    if "logits" in spec.needs and inputs.logits is None:
        return "needs logits; none were given"
    if {"logits", "labels"} <= spec.needs and inputs.logit_labels is None:
        return "needs labels that index the logits, but logits_match_labels=False (other class space)"
    return None


def _arguments(spec: MarkerSpec, inputs: MarkerInputs, device: torch.device) -> dict[str, Any]:
    args: dict[str, Any] = {"device": device} if spec.takes_device else {}
    if "features" in spec.needs:
        args["features"] = inputs.features
    if "logits" in spec.needs:
        args["logits"] = inputs.logits
    if "labels" in spec.needs:
        args["labels"] = inputs.logit_labels if "logits" in spec.needs else inputs.classes
    return args


def _subset_inputs(inputs: MarkerInputs, keep: np.ndarray) -> MarkerInputs:
    return MarkerInputs(
        features=inputs.features[keep],
        classes=inputs.classes[keep],
        logits=None if inputs.logits is None else inputs.logits[keep],
        logit_labels=None if inputs.logit_labels is None else inputs.logit_labels[keep],
    )


def _subset_value(
    spec: MarkerSpec,
    value: float,
    noise: Noise | None,
    subsets: list[MarkerInputs],
    device: torch.device,
    cancel: CancelCheck | None,
) -> MarkerValue:
    """A marker outside GLUE with its std over the repeats' subsets (module docstring), or with the
    reason it has none."""
    if noise is None or len(subsets) < 2:
        return MarkerValue(value)
    if noise.inflation is None:
        return MarkerValue(value, reason=f"no noise estimate: {noise.reason}")
    values = []
    for part in subsets:
        stop_if_cancelled(cancel)
        try:
            values.append(float(spec.fn(**_arguments(spec, part, device))))
        except MarkerUndefined as err:
            return MarkerValue(value, reason=f"no noise estimate: undefined on a repeat's subset: {err}")
    if not all(math.isfinite(v) for v in values):
        return MarkerValue(value, reason="no noise estimate: not finite on a repeat's subset")
    std = float(np.std(values, ddof=1)) * noise.inflation
    if std <= 0.0:
        return MarkerValue(value, reason=f"no noise estimate: {values[0]:.6g} on every repeat's subset")
    return MarkerValue(value, std=std, reason=noise.reason)


def _geometry_value(glue: GlueResult, value: float, std: float | None) -> MarkerValue:
    """A GLUE marker with what may be decided on it: not decidable from a degenerate regime, nor
    from draws-only repeats (their std omits the image noise, ``core.glue_subsets``); decidable with
    the inflated std and the reason shown from overlapping repeats."""
    regime, noise = glue.regime, glue.noise
    if regime is not None and regime.degenerate:
        reason = f"not decidable: degenerate GLUE regime: {regime.reason}"
        return MarkerValue(value, std=std, reason=reason, decidable=False)
    if glue.std is not None and noise is not None and noise.reason is not None:
        if noise.inflation is None:
            return MarkerValue(value, std=std, reason=f"not decidable: {noise.reason}", decidable=False)
        return MarkerValue(value, std=std, reason=noise.reason)
    return MarkerValue(value, std=std)


def compute_markers(
    features: Any,
    labels: Any,
    logits: Any = None,
    *,
    protocol: Protocol | None = None,
    logits_match_labels: bool = True,
    device: str | torch.device | None = None,
    names: Sequence[str] | None = None,
    cancel: CancelCheck | None = None,
) -> dict[str, MarkerValue]:
    """Compute every registered marker (or those in ``names``), in ``list_markers`` order.

    ``features`` (n, N), ``labels`` (n,) of any values, optional ``logits`` (n, C); numpy arrays,
    array-likes or torch tensors. A marker whose inputs are missing, or whose math is undefined on
    this data (``MarkerUndefined``), is returned as not applicable with a reason, never dropped.
    ``logits_match_labels=False`` says the model's classes are not the labels' class space: markers
    that read labels as logit columns are then not applicable. Markers run on ``device``
    (``core.device.resolve_device``: CUDA when present), passed to every marker function that takes
    one. Geometry markers share one ``core.glue.analyze`` call under ``protocol`` (default
    ``Protocol()``); when GLUE rejects degenerate data (e.g. all-zero features) they are not
    applicable with its message; when the analysis is degenerate (``core.glue_regime``) or its
    repeats shared all their points (draws-only noise, ``core.glue_subsets``) they keep their values
    but are not decidable, with the reason; overlapping repeats store the inflated std. Every other
    marker gets its std over the same per-class subsets (module docstring). Bad inputs,
    an unknown marker name or an unavailable device raise ``ValueError``. ``cancel`` is polled
    before each marker and inside GLUE (every repeat and solver batch); when it answers yes the
    computation stops with ``core.errors.Cancelled``.
    """
    protocol = Protocol() if protocol is None else protocol
    if not isinstance(protocol, Protocol):
        raise ValueError(
            f"protocol must be a Protocol, got {type(protocol).__name__}; use Protocol.from_dict"
        )
    specs = list_markers() if names is None else [get_marker(name) for name in names]
    inputs = marker_inputs(features, labels, logits, logits_match_labels)
    dev = resolve_device(device)  # an unavailable device is the caller's error: it propagates
    glue: GlueResult | None = None
    glue_error: str | None = None
    if any(spec.group == "geometry" for spec in specs):
        try:
            glue = analyze(
                inputs.features,
                inputs.classes,
                n_t=protocol.n_t,
                seed=protocol.seed,
                centering=protocol.centering,
                dichotomy=protocol.dichotomy,
                points_per_class=protocol.points_per_class,
                repeats=protocol.repeats,
                device=dev,
                cancel=cancel,
            )
        except ValueError as err:  # the inputs are valid, so this is degenerate data (all-zero features)
            glue_error = f"GLUE analysis failed: {err}"
    subsets: list[MarkerInputs] = []
    noise: Noise | None = None
    if protocol.repeats > 1 and any(spec.group != "geometry" for spec in specs):
        picks, noise = seeded_subsets(
            inputs.classes, protocol.points_per_class, protocol.repeats, protocol.seed
        )
        subsets = [_subset_inputs(inputs, keep) for keep in picks]
    results: dict[str, MarkerValue] = {}
    for spec in specs:
        stop_if_cancelled(cancel)
        reason = _not_applicable_reason(spec, inputs)
        if reason is None and spec.group == "geometry":
            reason = glue_error
        if reason is not None:
            results[spec.name] = MarkerValue.not_applicable(reason)
            continue
        try:
            if spec.group == "geometry":
                assert glue is not None
                value = float(spec.fn(glue=glue))
                stds = glue.decision_std or glue.std
                std = None if stds is None else stds.get(spec.name)
            else:
                value, std = float(spec.fn(**_arguments(spec, inputs, dev))), None
        except MarkerUndefined as err:
            results[spec.name] = MarkerValue.not_applicable(str(err))
            continue
        if spec.group == "geometry":
            assert glue is not None
            results[spec.name] = _geometry_value(glue, value, std)
        else:
            results[spec.name] = _subset_value(spec, value, noise, subsets, dev, cancel)
    return results
