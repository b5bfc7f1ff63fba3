"""The study's analysis, applied mechanically to the per-model records (docs/study/PLAN.md).

- Primary: H1 (D_eff), H2 (Ψ_eff), H3 (geometry rule vs ID accuracy) per task × centring, H4 per
  centring; Holm over the 14 tests. A variant is *not assessable* for a task when more than the
  plan's 20 % of the task's non-diverged models are flagged degenerate in it: its tests are then
  reported as such and enter Holm's family with p = 1 (the family keeps its 14 members, so a missing
  test never makes the others easier to pass).
- Sensitivity: the same tests on the accuracy-filtered models, reported with intervals, no Holm.
- Evidence: every rule × centring × outcome per task (:mod:`core.backtest.evidence`); the secondary
  outcomes and exploratory markers are read from it and reported without significance claims.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from zootriage.core.backtest.config import StudyConfig, TaskName
from zootriage.core.backtest.evidence import RULES, evidence
from zootriage.core.backtest.hypotheses import GEOMETRY_RULE, correlation, pairwise, v1_v2
from zootriage.core.backtest.measure import PRIMARY, fewshot_name
from zootriage.core.backtest.stats import holm
from zootriage.core.backtest.tables import Model, accuracy_filter, is_degenerate, kept, recipe_rows

TASKS: tuple[TaskName, ...] = ("A", "B")
HYPOTHESES = {"H1": "dimension", "H2": "utilization"}


def outcome_names(config: StudyConfig) -> list[str]:
    return [PRIMARY, *(fewshot_name(s) for s in config.probe.shots)]


def marker_names() -> list[str]:
    return sorted({name for rule in RULES.values() for name in rule})


def exclusions(models: Sequence[Model], config: StudyConfig) -> dict[str, Any]:
    """Rule 1 counts per recipe, rule 2 counts and assessability per task × centring."""
    out: dict[str, Any] = {}
    for task in TASKS:
        zoo = [m for m in models if m["task"] == task]
        live = kept(zoo, None)
        diverged = Counter(f"{m['arch']}/{m['recipe']}" for m in zoo if m["diverged"])
        degenerate = {}
        for centering in config.markers.centerings:
            count = sum(is_degenerate(m, centering) for m in live)
            fraction = count / len(live) if live else 0.0
            degenerate[centering] = {
                "count": count,
                "of": len(live),
                "fraction": fraction,
                "assessable": bool(live) and fraction <= config.stats.degenerate_max_fraction,
            }
        out[task] = {
            "models": len(zoo),
            "diverged": len(zoo) - len(live),
            "diverged_per_recipe": dict(diverged),
            "degenerate": degenerate,
        }
    return out


def v1_v2_cases(models: Sequence[Model]) -> list[tuple[Model, Model]]:
    """(v1, v2) model pairs of one architecture and seed."""
    by_key = {(m["arch"], m["seed"], m["arm"]): m for m in models}
    return [
        (m, by_key[(m["arch"], m["seed"], "v2")])
        for m in models
        if m["arm"] == "v1" and (m["arch"], m["seed"], "v2") in by_key
    ]


def hypothesis_tests(
    zoo: Sequence[Model], arm: Sequence[Model], config: StudyConfig, n_scored: int, *, with_p: bool
) -> dict[str, dict[str, Any]]:
    """H1–H4 on the given (already filtered, non-diverged) zoo and v1/v2 models."""
    st, seed = config.stats, config.seed
    out: dict[str, dict[str, Any]] = {}
    for centering in config.markers.centerings:
        for task in TASKS:
            models = kept([m for m in zoo if m["task"] == task], centering)
            rows = recipe_rows(models, centering, marker_names(), [PRIMARY])
            for hyp, marker in HYPOTHESES.items():
                out[f"{hyp}/{task}/{centering}"] = correlation(
                    rows, marker, PRIMARY, n_perm=st.n_perm if with_p else 0, n_boot=st.n_boot, seed=seed
                )
            out[f"H3/{task}/{centering}"] = pairwise(
                rows, GEOMETRY_RULE, PRIMARY, n_boot=st.n_boot, seed=seed
            )
        if config.v1v2 is not None:
            cases = v1_v2_cases(kept(arm, centering))
            out[f"H4/{centering}"] = v1_v2(cases, centering, PRIMARY, n_scored, n_boot=st.n_boot, seed=seed)
    return out


def _assessable(test_id: str, excl: dict[str, Any]) -> bool:
    parts = test_id.split("/")
    tasks = [parts[1]] if len(parts) == 3 else ["A"]
    return all(excl[t]["degenerate"][parts[-1]]["assessable"] for t in tasks)


def with_holm(
    tests: dict[str, dict[str, Any]], excl: dict[str, Any], alpha: float
) -> dict[str, dict[str, Any]]:
    """Each test with ``assessable``, Holm's adjusted p and ``significant`` (adjusted p ≤ α)."""
    raw = {}
    for test_id, result in tests.items():
        result["assessable"] = _assessable(test_id, excl)
        p = result.get("p")
        raw[test_id] = float(p) if result["assessable"] and p is not None else 1.0
    adjusted = holm(raw)
    for test_id, result in tests.items():
        result["p_holm"] = adjusted[test_id]
        result["significant"] = (
            result["assessable"] and result.get("p") is not None and adjusted[test_id] <= alpha
        )
    return tests


def _collapse(models: Sequence[Model]) -> dict[str, dict[str, float]]:
    """Per task/arch/recipe: mean numerical rank and active-unit fraction of its non-diverged models."""
    groups: dict[str, list[Model]] = {}
    for m in kept(models, None):
        groups.setdefault(f"{m['task']}/{m['arch']}/{m['recipe']}", []).append(m)
    return {
        key: {
            "numerical_rank": float(np.mean([m["numerical_rank"] for m in ms])),
            "active_fraction": float(np.mean([m["active_fraction"] for m in ms])),
            "id_acc": float(np.mean([m["id_acc"] for m in ms])),
            "train_acc": float(np.mean([m["train_acc"] for m in ms])),
            "models": len(ms),
        }
        for key, ms in sorted(groups.items())
    }


def analyze(models: Sequence[Model], config: StudyConfig, n_scored: dict[str, int]) -> dict[str, Any]:
    """Everything the report and the decision read; ``n_scored[task]`` is the probe's scored images."""
    zoo = [m for m in models if m["arm"] == "zoo"]
    arm = [m for m in models if m["arm"] in ("v1", "v2")]
    excl = exclusions(zoo, config)
    st = config.stats
    primary = with_holm(
        hypothesis_tests(kept(zoo, None), kept(arm, None), config, n_scored["A"], with_p=True), excl, st.alpha
    )
    filtered_zoo = [
        m
        for task in TASKS
        for arch in config.task(task).archs
        for m in accuracy_filter(
            kept([z for z in zoo if z["task"] == task and z["arch"] == arch], None),
            st.filter_train_acc_min,
            st.filter_central_fraction,
        )
    ]
    filtered_arm = accuracy_filter(kept(arm, None), st.filter_train_acc_min, st.filter_central_fraction)
    sensitivity = hypothesis_tests(filtered_zoo, filtered_arm, config, n_scored["A"], with_p=False)
    for test_id, result in sensitivity.items():
        result["assessable"] = _assessable(test_id, excl)
        task = test_id.split("/")[1] if not test_id.startswith("H4") else "A"
        pool = filtered_zoo if not test_id.startswith("H4") else filtered_arm
        result["models_kept"] = sum(m["task"] == task for m in pool)
    return {
        "exclusions": excl,
        "primary": primary,
        "sensitivity": sensitivity,
        "collapse": _collapse(zoo + arm),
        "evidence": {
            task: evidence(
                kept([m for m in zoo if m["task"] == task], None), config, outcome_names(config), excl[task]
            )
            for task in TASKS
        },
    }
