"""The pre-registered study's method (docs/study/PLAN.md, ``core.backtest``) on a user's stored runs:
what ``POST /v1/backtests`` and its page answer.

A user's runs are the study's models: runs of one architecture with the same recipe label (the
run's tag ``recipe_tag``) are the seeds of one recipe. As in the study:
- recipes with fewer than ``tables.MIN_SEEDS`` runs are left out (rule 3): without seeds there is no
  seed noise, so no pair could be called beyond it;
- each recipe is the mean of its seeds; the outcome's seed SD and the number of seeds make a pair of
  recipes *eligible* when their outcome gap exceeds the seed noise (``stats.pair_tally``);
- a marker's association is ρ̄, the mean over architectures of Spearman ρ(marker, outcome), with its
  recipe-bootstrap 95 % interval and (``n_perm`` > 0) its within-architecture permutation p and that
  p's Monte Carlo standard error;
- a rule (one marker in its preferred direction, or the geometry rule: D_eff and Ψ_eff both higher)
  is scored by its pairwise accuracy over eligible recipe pairs, an undecided pick not correct, with a
  Wilson interval for reading, and, when the runs carry ``id_accuracy``, Δ against the ID-accuracy
  rule on the same pairs with the recipe-bootstrap interval and one-sided p (``hypotheses.pairwise``).

A marker whose smaller values are better (``higher_is_better`` False) is negated for its rule, so
every rule picks its preferred value; ρ̄ is reported on the raw values.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zootriage.core.backtest import stats
from zootriage.core.backtest.hypotheses import GEOMETRY_RULE, correlation, pairwise
from zootriage.core.backtest.tables import ID_ACCURACY, MIN_SEEDS, RecipeRow
from zootriage.core.evidence import wilson
from zootriage.core.markers import get_marker

OUTCOME = "outcome"
METHOD = "preregistered"
# Bounds on what one request may allocate (the API computes in its own process): the pairwise
# bootstrap holds n_boot × (pairs of one architecture) cells at a time, the permutation test
# n_perm × (recipes of one architecture); at ~100 bytes a cell these stay a few hundred MB at most.
MAX_BOOT_PAIR_CELLS = 2_000_000
MAX_PERM_CELLS = 5_000_000
METHOD_TEXT = (
    "the pre-registered study's method (docs/study/PLAN.md): recipes are the means of their seeds; "
    "ρ̄ = mean over architectures of Spearman ρ with a recipe-bootstrap 95% interval and a "
    "within-architecture permutation p; pairwise accuracy over recipe pairs whose outcome gap exceeds "
    "the seed noise (1.96·√(s²/k + s²/k)), an undecided pick counted as wrong; Δ against the "
    "ID-accuracy rule on the same pairs with its recipe-bootstrap interval"
)


@dataclass(frozen=True)
class RunOutcome:
    """One stored run: its architecture, recipe label (None: none given), outcome and marker values."""

    run: str
    architecture: str
    recipe: str | None
    outcome: float
    values: Mapping[str, float | None]


def _direction(name: str) -> bool | None:
    if name == ID_ACCURACY:
        return True
    try:
        return get_marker(name).higher_is_better
    except ValueError:
        return None


def recipe_table(runs: Sequence[RunOutcome], names: Sequence[str], oriented: bool) -> list[RecipeRow]:
    """Recipes of at least ``MIN_SEEDS`` runs as the study's ``RecipeRow``s: the seed mean of each of
    ``names`` (None when a seed lacks it), negated for a lower-is-better marker when ``oriented``, and
    the outcome's mean, seed SD and seed count."""
    grouped: dict[tuple[str, str], list[RunOutcome]] = defaultdict(list)
    for r in runs:
        if r.recipe is not None:
            grouped[(r.architecture, r.recipe)].append(r)
    rows = []
    for (arch, recipe), seeds in sorted(grouped.items()):
        if len(seeds) < MIN_SEEDS:
            continue
        means: dict[str, float | None] = {}
        for name in names:
            values = [r.values.get(name) for r in seeds]
            present = [float(v) for v in values if v is not None and np.isfinite(v)]
            sign = -1.0 if oriented and _direction(name) is False else 1.0
            means[name] = sign * float(np.mean(present)) if len(present) == len(values) else None
        outcomes = [r.outcome for r in seeds]
        means[OUTCOME] = float(np.mean(outcomes))
        rows.append(RecipeRow(arch, recipe, len(seeds), means, {OUTCOME: float(np.std(outcomes, ddof=1))}))
    return rows


def _pairwise(
    rows: list[RecipeRow], rule: Sequence[str], with_baseline: bool, n_boot: int, seed: int
) -> dict[str, Any]:
    baseline = (ID_ACCURACY,) if with_baseline else tuple(rule)
    found = pairwise(rows, rule, OUTCOME, n_boot=n_boot, seed=seed, baseline=baseline)
    acc, n = found["accuracy"], int(found["eligible_pairs"])
    out: dict[str, Any] = {
        "accuracy": acc,
        "accuracy_ci": list(wilson(round(acc * n), n)) if acc is not None else None,
        "eligible_pairs": n,
        "id_accuracy_accuracy": found["baseline_accuracy"] if with_baseline else None,
        "delta": found["delta"] if with_baseline else None,
        "delta_ci": list(found["ci"]) if with_baseline and found["ci"] is not None else None,
        "p": found["p"] if with_baseline else None,
    }
    return out


def analyse(
    runs: Sequence[RunOutcome], markers: Sequence[str], *, n_boot: int, n_perm: int, seed: int
) -> dict[str, Any]:
    """Every marker of ``markers`` (and the geometry rule when both of its markers are among them) by
    the study's method; ``notes`` say what was left out and why."""
    names = sorted({*markers, ID_ACCURACY} if any(ID_ACCURACY in r.values for r in runs) else set(markers))
    raw, oriented = recipe_table(runs, names, False), recipe_table(runs, names, True)
    _check_size(raw, n_boot, n_perm)
    with_baseline = any(row.means.get(ID_ACCURACY) is not None for row in oriented)
    notes = [f"method: {METHOD_TEXT}", *left_out_notes(runs)]
    if not with_baseline:
        notes.append("no run carries id_accuracy: no Δ against the ID-accuracy rule")
    rules: dict[str, Any] = {}
    for name in markers:
        direction = _direction(name)
        entry: dict[str, Any] = {
            "markers": [name],
            "higher_is_better": direction,
            "correlation": _correlation(raw, name, n_boot, n_perm, seed),
            "pairwise": None,
        }
        if direction is not None:
            entry["pairwise"] = _pairwise(
                oriented, (name,), with_baseline and name != ID_ACCURACY, n_boot, seed
            )
        rules[name] = entry
    if all(m in markers for m in GEOMETRY_RULE):
        rules["geometry"] = {
            "markers": list(GEOMETRY_RULE),
            "higher_is_better": True,
            "correlation": None,
            "pairwise": _pairwise(oriented, GEOMETRY_RULE, with_baseline, n_boot, seed),
        }
    return {
        "method": METHOD,
        "recipes": len(raw),
        "recipes_by_architecture": {a: sum(r.arch == a for r in raw) for a in sorted({r.arch for r in raw})},
        "rules": rules,
        "notes": notes,
    }


def left_out_notes(runs: Sequence[RunOutcome]) -> list[str]:
    """What ``recipe_table`` leaves out, as notes: runs without a recipe label, and recipes with fewer
    than ``MIN_SEEDS`` runs (no seed noise, so no pair of them could be called beyond it)."""
    unlabelled = sum(r.recipe is None for r in runs)
    seeds: dict[tuple[str, str], int] = defaultdict(int)
    for r in runs:
        if r.recipe is not None:
            seeds[(r.architecture, r.recipe)] += 1
    single = sum(1 for n in seeds.values() if n < MIN_SEEDS)
    notes = []
    if unlabelled:
        notes.append(
            f"{unlabelled} run(s) have no recipe label and are left out: tag the seeds of one recipe "
            "with the same value of the recipe tag"
        )
    if single:
        notes.append(f"{single} recipe(s) have fewer than {MIN_SEEDS} runs (seeds) and are left out (rule 3)")
    return notes


def _check_size(rows: Sequence[RecipeRow], n_boot: int, n_perm: int) -> None:
    """``ValueError`` before any allocation when the resampling would exceed the bounds above."""
    largest = max((sum(r.arch == a for r in rows) for a in {r.arch for r in rows}), default=0)
    pairs = largest * (largest - 1) // 2
    if n_boot * pairs > MAX_BOOT_PAIR_CELLS:
        raise ValueError(
            f"n_boot {n_boot} × {pairs} recipe pairs of one architecture exceeds {MAX_BOOT_PAIR_CELLS:,}: "
            "lower n_boot or back-test fewer recipes at a time"
        )
    if n_perm * largest > MAX_PERM_CELLS:
        raise ValueError(
            f"n_perm {n_perm} × {largest} recipes of one architecture exceeds {MAX_PERM_CELLS:,}: "
            "lower n_perm"
        )


def _correlation(rows: list[RecipeRow], name: str, n_boot: int, n_perm: int, seed: int) -> dict[str, Any]:
    found = correlation(rows, name, OUTCOME, n_perm=n_perm, n_boot=n_boot, seed=seed)
    p = found["p"]
    return {
        "rho_by_architecture": found["rho_by_arch"],
        "rho_bar": found["rho_bar"],
        "rho_bar_ci": list(found["ci"]) if found["ci"] is not None else None,
        "p": p,
        "p_mc_error": stats.mc_standard_error(p, n_perm) if p is not None and n_perm > 0 else None,
        "recipes": found["recipes"],
    }
