"""The evidence the service quotes: for each rule × centring × outcome, the pairwise accuracy over
noise-eligible recipe pairs, Δ against the ID-accuracy rule with its recipe-bootstrap interval, the
eligible pairs, and for rules of one marker ρ per architecture and ρ̄ with its interval.

Rules: the geometry rule (D_eff and Ψ_eff both higher), ID accuracy, LogME and single markers. The
markers in ``EXPLORATORY`` are the plan's exploratory ones: reported, never tested.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zootriage.core.backtest.config import StudyConfig
from zootriage.core.backtest.hypotheses import GEOMETRY_RULE, correlation, pairwise
from zootriage.core.backtest.tables import ID_ACCURACY, Model, kept, recipe_rows

EXPLORATORY = ("radius", "nc1", "participation_ratio", "numerical_rank", "logme", "h_score")
RULES: dict[str, tuple[str, ...]] = {
    "geometry": GEOMETRY_RULE,
    "id_accuracy": (ID_ACCURACY,),
    "dimension": ("dimension",),
    "utilization": ("utilization",),
    **{name: (name,) for name in EXPLORATORY},
}


def evidence(
    models: Sequence[Model], config: StudyConfig, outcomes: Sequence[str], exclusions: dict[str, Any]
) -> dict[str, Any]:
    """``{centring: {outcome: {rule: {...}}}}`` over one task's non-diverged zoo ``models``."""
    names = sorted({n for rule in RULES.values() for n in rule})
    st, seed = config.stats, config.seed
    out: dict[str, Any] = {}
    for centering in config.markers.centerings:
        rows = recipe_rows(kept(models, centering), centering, names, outcomes)
        per_outcome: dict[str, Any] = {}
        for outcome in outcomes:
            per_rule = {}
            for rule, markers in RULES.items():
                entry = pairwise(rows, markers, outcome, n_boot=st.n_boot, seed=seed)
                if len(markers) == 1:
                    entry["correlation"] = correlation(
                        rows, markers[0], outcome, n_perm=0, n_boot=st.n_boot, seed=seed
                    )
                entry["exploratory"] = rule in EXPLORATORY
                per_rule[rule] = entry
            per_outcome[outcome] = per_rule
        out[centering] = {
            "assessable": exclusions["degenerate"][centering]["assessable"],
            "outcomes": per_outcome,
        }
    return out
