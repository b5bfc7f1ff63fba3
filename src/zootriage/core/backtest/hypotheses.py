"""The plan's tests on one set of models: a marker's ρ̄ (H1/H2), a pairwise rule against the
ID-accuracy rule on recipe pairs (H3) and on v1/v2 cases (H4). See :mod:`core.backtest.stats`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from zootriage.core.backtest import stats
from zootriage.core.backtest.tables import ID_ACCURACY, Model, RecipeRow, group_names, groups, value

GEOMETRY_RULE = ("dimension", "utilization")


def correlation(
    rows: Sequence[RecipeRow], marker: str, outcome: str, *, n_perm: int, n_boot: int, seed: int
) -> dict[str, Any]:
    """ρ per architecture, ρ̄ with its recipe-bootstrap interval and (``n_perm`` > 0) permutation p;
    the interval resamples the architectures whose ρ is defined, the ones ρ̄ averages."""
    cols = [marker, outcome]
    gs = groups(rows, cols)
    rho = stats.mean_rho(gs, 0, 1)
    out: dict[str, Any] = {
        "rho_by_arch": dict(zip(group_names(rows, cols), stats.rho_by_group(gs, 0, 1), strict=True)),
        "rho_bar": rho,
        "ci": None,
        "p": None,
        "recipes": int(sum(len(g) for g in gs)),
    }
    if rho is not None:
        used = [g for g, r in zip(gs, stats.rho_by_group(gs, 0, 1), strict=True) if r is not None]
        out["ci"] = stats.percentile_ci(
            stats.stratified_bootstrap(used, stats.mean_rho_rows(0, 1), n_boot, seed)
        )
        if n_perm > 0:
            out["p"] = stats.permutation_p(gs, 0, 1, n_perm, seed)
    return out


def pairwise(
    rows: Sequence[RecipeRow],
    rule: Sequence[str],
    outcome: str,
    *,
    n_boot: int,
    seed: int,
    baseline: Sequence[str] = (ID_ACCURACY,),
) -> dict[str, Any]:
    """acc(rule), acc(baseline) and Δ over the noise-eligible recipe pairs, with the recipe-bootstrap
    interval of Δ and the one-sided p = fraction of resamples with Δ* ≤ 0."""
    names = list(dict.fromkeys([outcome, *rule, *baseline]))
    gs = groups(rows, names, sd_of=outcome)
    cols = stats.PairColumns(outcome=0, sd=len(names), k=len(names) + 1)
    rule_idx = [names.index(r) for r in rule]
    base_idx = [names.index(b) for b in baseline]
    acc, eligible = stats.pair_accuracy(gs, cols, rule_idx)
    base_acc, _ = stats.pair_accuracy(gs, cols, base_idx)
    out: dict[str, Any] = {
        "accuracy": acc,
        "baseline_accuracy": base_acc,
        "delta": None if acc is None or base_acc is None else acc - base_acc,
        "ci": None,
        "p": None,
        "eligible_pairs": eligible,
    }
    if eligible:
        boot = stats.stratified_bootstrap(gs, stats.delta_rows(cols, rule_idx, base_idx), n_boot, seed)
        out["ci"] = stats.percentile_ci(boot)
        out["p"] = float(np.mean(boot <= 0)) if boot.size else None
    return out


PICK = {1: "v2", -1: "v1", 0: "undecided"}


def case_differences(records: Sequence[dict[str, Any]], rule: str, baseline: str) -> list[np.ndarray]:
    """Per architecture (sorted by name), each case's ``record[rule] − record[baseline]`` (booleans
    as 0/1): the clusters the case bootstrap and the architecture-level tests resample."""
    by_arch: dict[str, list[float]] = {}
    for r in records:
        by_arch.setdefault(r["arch"], []).append(float(r[rule]) - float(r[baseline]))
    return [np.asarray(v) for _, v in sorted(by_arch.items())]


def higher(first: Model, second: Model, names: Sequence[str], centering: str) -> int:
    """+1 when every ``names`` value of ``first`` is higher, −1 when every one is lower, else 0."""
    a = [value(first, n, centering) for n in names]
    b = [value(second, n, centering) for n in names]
    if any(v is None for v in a + b):
        return 0
    if all(x > y for x, y in zip(a, b, strict=True)):  # type: ignore[operator]
        return 1
    if all(x < y for x, y in zip(a, b, strict=True)):  # type: ignore[operator]
        return -1
    return 0


def v1_v2(
    cases: Sequence[tuple[Model, Model]],
    centering: str,
    outcome: str,
    n_scored: int,
    *,
    n_boot: int,
    seed: int,
) -> dict[str, Any]:
    """H4 over (v1, v2) cases: per case, does the geometry rule (and the ID-accuracy rule) pick the
    model with the better outcome? Δ over every case, the case bootstrap's interval and p, and the
    same counts for the cases whose gap is within two binomial SEs of the difference (noise) and not."""
    records = []
    for v1, v2 in cases:
        better = np.sign(value(v2, outcome, centering) - value(v1, outcome, centering))  # type: ignore[operator]
        geo = higher(v2, v1, GEOMETRY_RULE, centering)
        ida = higher(v2, v1, (ID_ACCURACY,), centering)
        p1, p2 = value(v1, outcome, centering), value(v2, outcome, centering)
        se = 2 * np.sqrt((p1 * (1 - p1) + p2 * (1 - p2)) / n_scored)  # type: ignore[operator]
        record = {
            "arch": v1["arch"],
            "seed": v1["seed"],
            "geometry_correct": bool(better != 0 and geo == better),
            "id_correct": bool(better != 0 and ida == better),
            "geometry_pick": PICK[geo],
            "id_pick": PICK[ida],
            "better": {1: "v2", -1: "v1", 0: "tie"}[int(better)],
            "within_noise": bool(abs(p2 - p1) <= se),  # type: ignore[operator]
        }
        records.append(record)
    out: dict[str, Any] = {"cases": len(records), "records": records}
    for part, subset in (
        ("all", records),
        ("within_noise", [r for r in records if r["within_noise"]]),
        ("beyond_noise", [r for r in records if not r["within_noise"]]),
    ):
        n = len(subset)
        geo_acc = sum(r["geometry_correct"] for r in subset) / n if n else None
        id_acc = sum(r["id_correct"] for r in subset) / n if n else None
        out[part] = {
            "cases": n,
            "accuracy": geo_acc,
            "baseline_accuracy": id_acc,
            "delta": None if geo_acc is None or id_acc is None else geo_acc - id_acc,
        }
    out["delta"], out["ci"], out["p"] = out["all"]["delta"], None, None
    if records:
        boot = stats.case_bootstrap(case_differences(records, "geometry_correct", "id_correct"), n_boot, seed)
        out["ci"] = stats.percentile_ci(boot)
        out["p"] = float(np.mean(boot <= 0))
    return out
