"""A user's zoo from a CSV table, as the pre-registered method's runs (:class:`on_runs.RunOutcome`).

One row per model: its label, architecture, recipe label (the seeds of one recipe share it), measured
outcome and markers. The runs export (``GET /v1/runs?format=csv``) plus an outcome and a recipe column
is such a table. Every other column whose non-empty cells all parse as finite numbers is a marker; an
empty cell is a missing value. Other columns (hashes, timestamps) are skipped and named in the
returned list.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from zootriage.core.backtest.on_runs import RunOutcome

MODEL_COLUMNS = ("model", "id")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_runs(
    path: Path,
    *,
    outcome: str,
    recipe: str = "recipe",
    architecture: str = "architecture",
    model: str | None = None,
) -> tuple[list[RunOutcome], list[str]]:
    """Runs from ``path`` and the non-numeric columns that were skipped.

    ``model`` names the model-label column (default: ``model``, else ``id``); a missing or empty
    architecture cell puts the model in architecture ``"-"``, an empty recipe cell leaves the run
    without a recipe (the analysis names how many it left out). Raises ``ValueError`` with the row
    number for a missing column or an outcome that is not a finite number.
    """
    try:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
            header = list(rows[0].keys()) if rows else []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    if not rows:
        raise ValueError(f"{path} has no data rows")
    label = model or next((c for c in MODEL_COLUMNS if c in header), None)
    if label is None or label not in header:
        raise ValueError(f"{path}: no model column (looked for {model or ' or '.join(MODEL_COLUMNS)})")
    for what, column in (("outcome", outcome), ("recipe", recipe)):
        if column not in header:
            raise ValueError(f"{path}: no {what} column {column!r}; columns are {header}")
    candidates = [c for c in header if c not in {label, architecture, outcome, recipe}]
    markers = [c for c in candidates if all(not r[c] or _number(r[c]) is not None for r in rows)]
    skipped = [c for c in candidates if c not in markers]
    runs = []
    seen: set[str] = set()
    for i, row in enumerate(rows, start=2):
        value = _number(row[outcome] or "")
        if value is None:
            raise ValueError(f"{path} row {i}: outcome {row[outcome]!r} is not a finite number")
        if row[label] in seen:
            raise ValueError(f"{path} row {i}: model {row[label]!r} appears twice")
        seen.add(row[label])
        arch = (row.get(architecture) or "").strip() or "-"
        values = {c: _number(row[c]) if row[c] else None for c in markers}
        runs.append(RunOutcome(row[label], arch, (row[recipe] or "").strip() or None, value, values))
    return runs, skipped
