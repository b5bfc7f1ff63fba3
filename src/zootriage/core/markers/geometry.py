"""GLUE geometry markers (docs/method.md), read from one shared ``core.glue.analyze`` result.

Each function receives the ``GlueResult`` of the run; ``compute_markers`` calls ``analyze`` once
for all of them and attaches the standard deviation over repeats. The selection rule of the paper
(Chou et al., ICLR 2026) prefers higher D_eff and higher Ψ_eff among weights of one architecture.
"""

from __future__ import annotations

import math

from zootriage.core.glue import GlueResult
from zootriage.core.markers.registry import MarkerUndefined, register_marker

GROUP = "geometry"
NEEDS = ("features", "labels")


def _finite(glue: GlueResult, name: str) -> float:
    """The field ``name`` of ``glue``; GLUE's limits (α = ∞ when N_crit = 0, R_eff = ∞ when the axis
    parts carry all of the projection) are reported as undefined rather than stored as inf."""
    value = float(getattr(glue, name))
    if not math.isfinite(value):
        raise MarkerUndefined(f"GLUE gives {name} = {value}: not a finite number for these manifolds")
    return value


@register_marker(
    needs=NEEDS, higher_is_better=True, group=GROUP, description="Manifold capacity α = P / N_crit"
)
def capacity(*, glue: GlueResult) -> float:
    """α = P / N_crit, N_crit = mean_k ‖Π_{span of active anchors} t_k‖² over Gaussian t_k."""
    return _finite(glue, "capacity")


@register_marker(
    needs=NEEDS, higher_is_better=True, group=GROUP, description="Effective manifold dimension D_eff"
)
def dimension(*, glue: GlueResult) -> float:
    """D_eff = mean_k(a_k) / P, a_k = t¹ᵀ(G¹)⁺t¹ with t¹ = S¹t_k the anchor axis parts."""
    return _finite(glue, "dimension")


@register_marker(
    needs=NEEDS, higher_is_better=None, group=GROUP, description="Effective manifold radius R_eff"
)
def radius(*, glue: GlueResult) -> float:
    """R_eff = sqrt(mean_k b_k / mean_k(a_k − b_k)), b_k = t¹ᵀ(G⁰ + G¹)⁺t¹."""
    return _finite(glue, "radius")


@register_marker(needs=NEEDS, higher_is_better=True, group=GROUP, description="Effective utilization Ψ_eff")
def utilization(*, glue: GlueResult) -> float:
    """Ψ_eff = mean_k(b_k) / N_crit, so that α = Ψ_eff (1 + R_eff⁻²) / D_eff."""
    return _finite(glue, "utilization")


@register_marker(
    needs=NEEDS, higher_is_better=None, group=GROUP, description="Mean |cos| between anchor centres"
)
def center_alignment(*, glue: GlueResult) -> float:
    """center_alignment = mean_{μ≠ν} |cos(s⁰_μ, s⁰_ν)|, s⁰_μ the mean anchor point of class μ."""
    return _finite(glue, "center_alignment")


@register_marker(
    needs=NEEDS, higher_is_better=None, group=GROUP, description="Mean |cos| between anchor axis parts"
)
def axis_alignment(*, glue: GlueResult) -> float:
    """axis_alignment = mean over k and pairs μ≠ν in the active set A_k of |cos(s¹_μ(t_k), s¹_ν(t_k))|."""
    return _finite(glue, "axis_alignment")


@register_marker(
    needs=NEEDS,
    higher_is_better=None,
    group=GROUP,
    description="Mean |cos| between anchor centres and other classes' axis parts",
)
def center_axis_alignment(*, glue: GlueResult) -> float:
    """center_axis_alignment = mean over k and pairs μ≠ν in A_k of |cos(s⁰_μ, s¹_ν(t_k))|."""
    return _finite(glue, "center_axis_alignment")


@register_marker(
    needs=NEEDS,
    higher_is_better=None,
    group=GROUP,
    description="RMS norm of the anchor centres (in the features' units)",
)
def center_norm(*, glue: GlueResult) -> float:
    """center_norm = sqrt(Σ_μ ‖s⁰_μ‖² / P)."""
    return _finite(glue, "center_norm")
