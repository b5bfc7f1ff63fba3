"""``zootriage backtest FILE.csv``: does each marker predict the measured outcome on your own zoo?

By the pre-registered study's method (docs/study/PLAN.md; ``core.backtest.on_runs``, the method of
``POST /v1/backtests``): rows of one architecture with the same recipe label are the seeds of one
recipe; a marker's ρ̄ (mean over architectures of Spearman ρ with the outcome) with its recipe-bootstrap
interval and permutation p, and each rule's pairwise accuracy over the recipe pairs whose outcome gap
exceeds the seed noise, with Δ against the ID-accuracy rule when the table has ``id_accuracy``.

The CSV has a row per model: a model column (``model`` or ``id``), an ``architecture`` column, a
recipe column (``--recipe``, default ``recipe``), the outcome column (``--outcome``, default
``ood_accuracy``) and one numeric column per marker (the runs CSV export with an outcome and a recipe
column added works as is). Bad input exits with status 2, no traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from zootriage.app.cli.exits import BAD_INPUT


def _ci(value: float | None, ci: list[float] | None, fmt: str = "+.2f") -> str:
    if value is None:
        return "–"
    text = format(value, fmt)
    return f"{text} [{format(ci[0], fmt)}, {format(ci[1], fmt)}]" if ci else text


def _row(name: str, rule: dict[str, Any]) -> list[str]:
    corr, pairs = rule["correlation"] or {}, rule["pairwise"] or {}
    p = corr.get("p")
    return [
        name,
        str(corr.get("recipes", "–")),
        _ci(corr.get("rho_bar"), corr.get("rho_bar_ci")),
        "–" if p is None else f"{p:.4f}",
        f"{_ci(pairs.get('accuracy'), pairs.get('accuracy_ci'), '.2f')} ({pairs.get('eligible_pairs', 0)})"
        if pairs
        else "–",
        _ci(pairs.get("delta"), pairs.get("delta_ci")) if pairs else "–",
    ]


def backtest(
    file: Annotated[Path, typer.Argument(help="CSV: a row per model with its markers and its outcome")],
    outcome: Annotated[str, typer.Option(help="column holding the measured OOD outcome")] = "ood_accuracy",
    recipe: Annotated[
        str, typer.Option(help="column naming each model's recipe (its seeds share it)")
    ] = "recipe",
    architecture: Annotated[
        str, typer.Option(help="column naming each model's architecture")
    ] = "architecture",
    model: Annotated[str | None, typer.Option(help="model label column (default: model, else id)")] = None,
    n_boot: Annotated[int, typer.Option(help="bootstrap resamples for the 95% intervals")] = 2000,
    n_perm: Annotated[int, typer.Option(help="permutations for ρ̄'s p (0: none)")] = 10000,
    seed: Annotated[int, typer.Option(help="resampling seed")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print every number as JSON")] = False,
) -> None:
    """ρ̄ over architectures and pairwise accuracy over recipe pairs, by the pre-registered method."""
    from zootriage.core.backtest.csv_runs import read_runs
    from zootriage.core.backtest.on_runs import analyse
    from zootriage.core.backtest.tables import MIN_SEEDS

    err = Console(stderr=True)
    try:
        if n_boot < 1 or n_perm < 0:
            raise ValueError(f"need --n-boot >= 1 and --n-perm >= 0, got {n_boot} and {n_perm}")
        runs, skipped = read_runs(
            file, outcome=outcome, recipe=recipe, architecture=architecture, model=model
        )
        names = sorted({name for r in runs for name in r.values})
        if not names:
            raise ValueError(f"{file} has no marker column (a column of numbers)")
        result = analyse(runs, names, n_boot=n_boot, n_perm=n_perm, seed=seed)
        if result["recipes"] == 0:
            raise ValueError(
                f"no recipe has {MIN_SEEDS} or more runs: give the seeds of one recipe the same "
                f"{recipe!r} value (architecture {architecture!r})"
            )
    except ValueError as exc:
        err.print(f"[red]error[/red] bad_backtest: {escape(str(exc))}")
        raise typer.Exit(BAD_INPUT) from None
    if skipped:
        err.print(f"skipped non-numeric columns: {', '.join(skipped)}")
    if as_json:
        sys.stdout.write(json.dumps({**result, "n_models": len(runs)}, indent=2) + "\n")
        return
    table = Table(
        title=f"{len(runs)} models, {result['recipes']} recipes {result['recipes_by_architecture']} "
        f"against {outcome}"
    )
    for column in ("rule", "recipes", "ρ̄ [95% CI]", "p", "pairwise acc [95% CI] (pairs)", "Δ vs ID acc"):
        table.add_column(column)
    for name, rule in result["rules"].items():
        table.add_row(*(escape(cell) for cell in _row(name, rule)))
    out = Console()
    out.print(table)
    for note in result["notes"]:
        out.print(f"note: {escape(note)}")


def register(app: typer.Typer) -> None:
    app.command("backtest")(backtest)
