"""Study 3's decision: the rule of docs/study/PLAN-3.md, "What changes the product's default", applied
mechanically to a finished analysis (:func:`core.defaults.plan3_decision`, the same function the
product applies to the evidence file).

:func:`rule_inputs` is what the rule reads, recorded in the evidence (``rule_inputs``): the tasks,
whether T1 and T2 are significant after Holm, whether the frozen rule is calibrated, and per rule,
pair set and task (or pooled over tasks) the correct picks and eligible pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from zootriage.core.backtest.study3_analysis import tallies
from zootriage.core.defaults import BASELINES, CANDIDATES, plan3_decision


def rule_inputs(analysis: Mapping[str, Any], tasks: Sequence[str]) -> dict[str, Any]:
    """The numbers the plan's rule reads, from ``analysis`` (:func:`study3_analysis.analyze3`)."""
    pair_sets: dict[str, set[str]] = {m: {"all", *BASELINES.values()} for m in CANDIDATES}
    for baseline, pair_set in BASELINES.items():
        pair_sets.setdefault(baseline, set()).update({"all", pair_set})
    counts: dict[str, dict[str, dict[str, list[int]]]] = {}
    for rule, sets in sorted(pair_sets.items()):
        counts[rule] = {}
        for pair_set in sorted(sets):
            counts[rule][pair_set] = {}
            for scope in [*tasks, "pooled"]:
                t = tallies(analysis["pairs"], rule, pair_set, None if scope == "pooled" else scope)
                counts[rule][pair_set][scope] = [
                    sum(x.correct for x in t.values()),
                    sum(x.pairs for x in t.values()),
                ]
    frozen = analysis.get("frozen_rule")
    return {
        "tasks": list(tasks),
        "significant": {test: bool(analysis["tests"][test]["significant"]) for test in CANDIDATES.values()},
        "frozen_calibrated": bool(frozen and frozen["calibrated"]),
        "tallies": counts,
    }


def decide3(analysis: Mapping[str, Any], tasks: Sequence[str]) -> dict[str, Any]:
    """The default rule for rankings and the v1/v2 verdict, and what the answer quotes as confidence."""
    return plan3_decision(rule_inputs(analysis, tasks), analysis["accuracy"])
