"""From per-model records to the recipe-level tables the statistics run on.

Which models an analysis sees is fixed by the plan's exclusion rules: diverged models never
(rule 1); models whose GLUE result in a centring is flagged ``degenerate`` not in that centring's
analyses (rule 2); recipes with fewer than 2 kept seeds not at all (rule 3); accuracy filters only in
the sensitivity analysis (rule 4: train accuracy ≥ 99 % and ID test accuracy inside the central 80 %
of its range for the architecture, the range taken over the same models' non-diverged members).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zootriage.core.markers import list_markers

MIN_SEEDS = 2
ID_ACCURACY = "id_accuracy"
GEOMETRY_NAMES = frozenset(spec.name for spec in list_markers(group="geometry"))

Model = dict[str, Any]


def value(model: Model, name: str, centering: str) -> float | None:
    """A model's value of a marker (geometry under ``centering``), ID accuracy or outcome."""
    if name == ID_ACCURACY:
        return float(model["id_acc"])
    if name in model.get("outcomes", {}):
        return float(model["outcomes"][name])
    if name in GEOMETRY_NAMES:
        return model["geometry"][centering]["markers"].get(name)
    return model["markers"].get(name)


def is_degenerate(model: Model, centering: str) -> bool:
    return model["geometry"][centering]["regime"].get("degenerate") is True


def kept(models: Sequence[Model], centering: str | None) -> list[Model]:
    """Non-diverged models, and with a centring also not flagged degenerate in it."""
    out = [m for m in models if not m["diverged"]]
    return out if centering is None else [m for m in out if not is_degenerate(m, centering)]


def accuracy_filter(models: Sequence[Model], train_min: float, central: float) -> list[Model]:
    """The sensitivity filter of rule 4 over non-diverged ``models``."""
    by_arch: dict[str, list[float]] = defaultdict(list)
    for m in models:
        by_arch[m["arch"]].append(m["id_acc"])
    out = []
    for m in models:
        lo, hi = min(by_arch[m["arch"]]), max(by_arch[m["arch"]])
        margin = (hi - lo) * (1 - central) / 2
        if m["train_acc"] >= train_min and lo + margin <= m["id_acc"] <= hi - margin:
            out.append(m)
    return out


@dataclass(frozen=True)
class RecipeRow:
    """One recipe's seed means (``None`` where a kept seed lacks the value), the seed SD of each
    outcome and the number of kept seeds."""

    arch: str
    recipe: str
    k: int
    means: dict[str, float | None]
    sds: dict[str, float]


def recipe_rows(
    models: Sequence[Model], centering: str, names: Sequence[str], outcomes: Sequence[str]
) -> list[RecipeRow]:
    grouped: dict[tuple[str, str], list[Model]] = defaultdict(list)
    for m in models:
        grouped[(m["arch"], m["recipe"])].append(m)
    rows = []
    for (arch, recipe), members in sorted(grouped.items()):
        if len(members) < MIN_SEEDS:
            continue
        means: dict[str, float | None] = {}
        for name in [*names, *outcomes]:
            values = [value(m, name, centering) for m in members]
            present = [v for v in values if v is not None]
            means[name] = float(np.mean(present)) if len(present) == len(values) else None
        sds = {o: float(np.std([m["outcomes"][o] for m in members], ddof=1)) for o in outcomes}
        rows.append(RecipeRow(arch, recipe, len(members), means, sds))
    return rows


def groups(rows: Sequence[RecipeRow], columns: Sequence[str], sd_of: str | None = None) -> list[np.ndarray]:
    """Per architecture (sorted), an array of its recipes' ``columns`` (then the SD of ``sd_of`` and
    k when given); recipes missing any column are left out."""
    by_arch: dict[str, list[list[float]]] = defaultdict(list)
    for row in rows:
        values = [row.means[c] for c in columns]
        if any(v is None for v in values):
            continue
        extra = [row.sds[sd_of], float(row.k)] if sd_of is not None else []
        by_arch[row.arch].append([float(v) for v in values if v is not None] + extra)
    return [np.asarray(by_arch[a], dtype=np.float64) for a in sorted(by_arch)]


def group_names(rows: Sequence[RecipeRow], columns: Sequence[str]) -> list[str]:
    """The architectures :func:`groups` returns, in its order."""
    return sorted({r.arch for r in rows if all(r.means[c] is not None for c in columns)})
