"""The rule of docs/study/PLAN-3.md, "What changes the product's default", applied mechanically.

A marker M ∈ {Ψ_eff (T1), numerical rank (T2)} qualifies when (a) its test is significant after Holm,
(b) acc(M) − acc(ID accuracy) ≥ 0.10 on each task, and (c) it beats every trivial baseline by ≥ 0.05,
pooled over tasks, on the pairs where that baseline applies (ID accuracy: all; more v2 parts:
decoupled; always v2: v1/v2 pairs; numerical rank: all, for Ψ_eff; longer schedule: where it decides).
A baseline with no pair where it applies cannot be beaten or lost to; it is listed as not applicable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from zootriage.core.backtest.study3_analysis import tallies

MARGIN_ID = 0.10
MARGIN_BASELINE = 0.05
CANDIDATES = {"psi_eff": "T1", "numerical_rank": "T2"}
BASELINES = {
    "id_accuracy": "all",
    "more_v2_parts": "decoupled",
    "always_v2": "v1v2",
    "numerical_rank": "all",
    "longer_schedule": "longer_decides",
}


def _accuracy(pairs: Sequence[Mapping[str, Any]], rule: str, pair_set: str, task: str | None) -> float | None:
    t = tallies(pairs, rule, pair_set, task)
    n = sum(x.pairs for x in t.values())
    return sum(x.correct for x in t.values()) / n if n else None


def qualifies(analysis: Mapping[str, Any], marker: str, tasks: Sequence[str]) -> dict[str, Any]:
    """Conditions (a)–(c) for ``marker`` with the numbers behind each."""
    pairs = analysis["pairs"]
    test = analysis["tests"][CANDIDATES[marker]]
    per_task = {}
    for task in tasks:
        m, base = _accuracy(pairs, marker, "all", task), _accuracy(pairs, "id_accuracy", "all", task)
        per_task[task] = None if m is None or base is None else m - base
    margins: dict[str, float | None] = {}
    for baseline, pair_set in BASELINES.items():
        if baseline == marker:
            continue
        m, base = _accuracy(pairs, marker, pair_set, None), _accuracy(pairs, baseline, pair_set, None)
        margins[baseline] = None if m is None or base is None else m - base
    a = bool(test["significant"])
    b = all(d is not None and d >= MARGIN_ID - 1e-12 for d in per_task.values())
    c = all(d >= MARGIN_BASELINE - 1e-12 for d in margins.values() if d is not None)
    return {"a_holm": a, "b_vs_id_per_task": per_task, "b": b, "c_margins": margins, "c": c,
            "qualifies": a and b and c}  # fmt: skip


def decide3(analysis: Mapping[str, Any], tasks: Sequence[str]) -> dict[str, Any]:
    """The default rule for rankings and the v1/v2 verdict, and what the answer quotes as confidence."""
    checks = {m: qualifies(analysis, m, tasks) for m in CANDIDATES}
    passing = [m for m, c in checks.items() if c["qualifies"]]
    frozen = analysis.get("frozen_rule")
    calibrated = bool(frozen and frozen["calibrated"])
    accuracy = analysis["accuracy"]
    if passing:
        pooled = {m: _accuracy(analysis["pairs"], m, "all", None) or 0.0 for m in passing}
        base = _accuracy(analysis["pairs"], "id_accuracy", "all", None) or 0.0
        default = max(passing, key=lambda m: pooled[m] - base)
        return {
            "checks": checks,
            "default": default,
            "centering": "none",
            "confidence": "frozen_rule_probability" if calibrated else "win_rate",
            "win_rate": accuracy[default]["pooled"],
        }
    always = accuracy.get("always_v2", {})
    v2_prior = all(always.get(t, {}).get("ci95") is not None and always[t]["ci95"][0] > 0.5 for t in tasks)
    scored = {r: a["pooled"] for r, a in accuracy.items() if a["pooled"]["accuracy"] is not None}
    best = max(scored, key=lambda r: scored[r]["accuracy"]) if scored else None
    return {
        "checks": checks,
        "default": "id_accuracy",
        "centering": "none",
        "nothing_predicts": True,
        "rankings": {"rule": "id_accuracy", "win_rate": accuracy.get("id_accuracy", {}).get("pooled")},
        "v1v2": (
            {"answer": "v2 on the recipe prior (not on geometry)", "win_rate": always.get("pooled")}
            if v2_prior
            else {
                "answer": "no rule beats a coin on our evidence",
                "exploratory_best": best,
                "win_rate": scored.get(best) if best else None,
            }
        ),
        "confidence": "frozen_rule_probability" if calibrated else "win_rate",
    }
