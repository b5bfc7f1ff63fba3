"""The Monte Carlo error of study 3's bootstrap, and whether it could flip a decision.

The primary tests are exact sign flips (every sign pattern enumerated): they have no Monte Carlo
error. The architecture-cluster bootstrap's 95 % bounds do, since they come from a finite number of
resamples drawn with one generator seed (the plan's: ``default_rng(0)``). Two kinds of bound decide
something (PLAN-3.md, "What changes the product's default"):

- "always v2"'s lower bound on each task: above 0.5 on both tasks, the v1/v2 answer falls back on the
  recipe prior;
- the frozen rule's Brier and ECE upper bounds: under :data:`BRIER_MAX` and at most :data:`ECE_MAX`,
  the rule is calibrated and its P is quoted.

Each is recomputed with ``seeds`` generator seeds at the plan's resample count. A bound is *stable*
when every seed puts it on the same side of its threshold. The other bounds (each rule's accuracy
interval) decide nothing and are only shown; their largest spread over the seeds is reported as
their Monte Carlo error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from zootriage.core.backtest.stats import cluster_bootstrap
from zootriage.core.backtest.study3_analysis import (
    APPLIES,
    BRIER_MAX,
    ECE_MAX,
    frozen_calibration,
    tallies,
)

SEEDS = tuple(range(20))  # seed 0 is the plan's own


def _bound(values: Sequence[float], threshold: float, holds: Callable[[float], bool]) -> dict[str, Any]:
    """A decisive bound over the seeds: its range, and whether every seed agrees with seed 0."""
    sides = {holds(v) for v in values}
    return {"min": min(values), "max": max(values), "threshold": threshold,
            "holds": holds(values[0]), "stable": len(sides) == 1}  # fmt: skip


def _counts(pairs: Sequence[Mapping[str, Any]], rule: str, scope: str) -> dict[str, tuple[int, int]]:
    t = tallies(pairs, rule, APPLIES.get(rule, "all"), None if scope == "pooled" else scope)
    return {arch: (x.correct, x.pairs) for arch, x in t.items()}


def bootstrap_error(
    analysis: Mapping[str, Any], tasks: Sequence[str], n_boot: int, seeds: Sequence[int] = SEEDS
) -> dict[str, Any]:
    """The decisive bounds under each of ``seeds`` and the largest spread of the other intervals'
    end points; ``stable`` when no decisive bound changes side (:func:`_bound`)."""
    pairs = analysis["pairs"]
    decisive: dict[str, dict[str, Any]] = {}
    for task in tasks:
        counts = _counts(pairs, "always_v2", task)
        lows = [ci[0] for s in seeds if (ci := cluster_bootstrap(counts, n_boot, s)) is not None]
        if lows:
            decisive[f"always_v2 lower bound, task {task}"] = _bound(lows, 0.5, lambda v: v > 0.5)
    calibrations = [frozen_calibration(pairs, n_boot, seed=s) for s in seeds]
    if all(c is not None for c in calibrations):
        brier = [c["brier_ci95"][1] for c in calibrations if c is not None]
        ece = [c["ece_ci95"][1] for c in calibrations if c is not None]
        decisive["frozen rule Brier upper bound"] = _bound(brier, BRIER_MAX, lambda v: v < BRIER_MAX)
        decisive["frozen rule ECE upper bound"] = _bound(ece, ECE_MAX, lambda v: v <= ECE_MAX)
    spread = 0.0
    for rule, scopes in analysis["accuracy"].items():
        for scope in scopes:
            counts = _counts(pairs, rule, scope)
            bounds = [ci for s in seeds if (ci := cluster_bootstrap(counts, n_boot, s)) is not None]
            for end in (0, 1):
                ends = [b[end] for b in bounds]
                if ends:
                    spread = max(spread, max(ends) - min(ends))
    return {
        "seeds": len(seeds),
        "resamples": n_boot,
        "decisive": decisive,
        "largest_interval_end_spread": spread,
        "stable": all(b["stable"] for b in decisive.values()),
    }
