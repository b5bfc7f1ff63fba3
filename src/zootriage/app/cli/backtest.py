"""``zootriage backtest FILE.csv``: does each marker predict the measured outcome on your own zoo?

``--method`` has the meaning of ``POST /v1/backtests``'s ``method``; rows of one architecture with the
same recipe label are the seeds of one recipe either way.

- ``confirmatory`` (the default, study 3's method: docs/study/PLAN-3.md, ``core.backtest.on_runs3``):
  each rule's correct / wrong / undecided picks over the recipe pairs whose outcome gap exceeds the
  seed noise, its accuracy with the architecture-cluster bootstrap interval, and, when the table has
  ``id_accuracy``, mean d_a against the ID-accuracy rule with the exact sign-flip p over architectures
  (not assessable with fewer than ``on_runs3.MIN_ARCHS`` architectures).
- ``preregistered`` (study 2's method: docs/study/PLAN.md, ``core.backtest.on_runs``): a marker's ρ̄
  (mean over architectures of Spearman ρ with the outcome) with its recipe-bootstrap interval and
  permutation p, and each rule's pairwise accuracy over the same noise-eligible pairs, with Δ against
  the ID-accuracy rule.

The API's third method, ``first-study`` (its answer before ``method`` existed), is left to the API.

The CSV has a row per model: a model column (``model`` or ``id``), an ``architecture`` column, a
recipe column (``--recipe``, default ``recipe``), the outcome column (``--outcome``, default
``ood_accuracy``) and one numeric column per marker (the runs CSV export with an outcome and a recipe
column added works as is). Bad input exits with status 2, no traceback.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from zootriage.app.cli.exits import BAD_INPUT
from zootriage.app.cli.terminal_text import escape

if TYPE_CHECKING:
    from zootriage.core.backtest.on_runs import RunOutcome


class Method(StrEnum):
    """The methods of ``POST /v1/backtests`` that a CSV of recipes can feed."""

    confirmatory = "confirmatory"
    preregistered = "preregistered"


def _ci(value: float | None, ci: list[float] | None, fmt: str = "+.2f") -> str:
    if value is None:
        return "–"
    text = format(value, fmt)
    return f"{text} [{format(ci[0], fmt)}, {format(ci[1], fmt)}]" if ci else text


def _row(name: str, rule: dict[str, Any]) -> list[str]:
    """A preregistered rule's cells: recipes, ρ̄ [CI], p, pairwise accuracy [CI] (pairs), Δ [CI]."""
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


def _versus_id(versus: dict[str, Any] | None, min_archs: int) -> list[str]:
    """A confirmatory rule's mean d_a and its exact p with the minimum attainable p, or why there is none."""
    if versus is None:
        return ["–", "–"]
    mean = "–" if versus["mean_d"] is None else f"{versus['mean_d']:+.3f}"
    if not versus["assessable"]:
        return [mean, f"not assessable ({versus['n_archs']} of {min_archs} architectures)"]
    return [mean, f"{versus['p']:.4f} (min {versus['min_p']:.4f})"]


def _confirmatory_row(name: str, rule: dict[str, Any], min_archs: int) -> list[str]:
    """A confirmatory rule's cells: its picks, accuracy [CI] and the comparison with ID accuracy."""
    counts = [str(rule[key]) for key in ("correct", "wrong", "undecided", "pairs")]
    return [
        name,
        *counts,
        _ci(rule["accuracy"], rule["ci95"], ".2f"),
        *_versus_id(rule["vs_id_accuracy"], min_archs),
    ]


def _analyse(
    method: Method, runs: list[RunOutcome], names: list[str], n_boot: int, n_perm: int, seed: int
) -> dict[str, Any]:
    """``method``'s answer on the runs, as ``POST /v1/backtests`` computes it (confirmatory: seed 0)."""
    if method is Method.confirmatory:
        from zootriage.core.backtest import on_runs3

        return on_runs3.analyse(runs, names, n_boot=n_boot)
    from zootriage.core.backtest.on_runs import analyse

    return analyse(runs, names, n_boot=n_boot, n_perm=n_perm, seed=seed)


def _table(result: dict[str, Any], n_models: int, outcome: str) -> Table:
    """The answer as one row per rule, in ``result["method"]``'s columns."""
    title = f"{n_models} models, {result['recipes']} recipes {result['recipes_by_architecture']}"
    if result["method"] == Method.confirmatory:
        table = Table(title=f"{title}, {result['eligible_pairs']} eligible pairs against {outcome}")
        columns: tuple[str, ...] = (
            *("rule", "correct", "wrong", "undecided", "pairs", "accuracy [95% CI]"),
            *("mean d_a vs ID acc", "p (min p)"),
        )
        rules = result["confirmatory_rules"].items()
        rows = [_confirmatory_row(name, rule, result["min_archs"]) for name, rule in rules]
    else:
        table = Table(title=f"{title} against {outcome}")
        columns = ("rule", "recipes", "ρ̄ [95% CI]", "p", "pairwise acc [95% CI] (pairs)", "Δ vs ID acc")
        rows = [_row(name, rule) for name, rule in result["rules"].items()]
    for column in columns:
        table.add_column(column)
    for cells in rows:
        table.add_row(*(escape(cell) for cell in cells))
    return table


def backtest(
    file: Annotated[Path, typer.Argument(help="CSV: a row per model with its markers and its outcome")],
    method: Annotated[
        Method,
        typer.Option(
            help="confirmatory (study 3's method) or preregistered (study 2's), as POST /v1/backtests"
        ),
    ] = Method.confirmatory,
    outcome: Annotated[str, typer.Option(help="column holding the measured OOD outcome")] = "ood_accuracy",
    recipe: Annotated[
        str, typer.Option(help="column naming each model's recipe (its seeds share it)")
    ] = "recipe",
    architecture: Annotated[
        str, typer.Option(help="column naming each model's architecture")
    ] = "architecture",
    model: Annotated[str | None, typer.Option(help="model label column (default: model, else id)")] = None,
    n_boot: Annotated[int, typer.Option(help="bootstrap resamples for the 95% intervals")] = 2000,
    n_perm: Annotated[int, typer.Option(help="permutations for ρ̄'s p (0: none); preregistered only")] = 10000,
    seed: Annotated[
        int, typer.Option(help="resampling seed; preregistered only (confirmatory's bootstrap uses 0)")
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print every number as JSON")] = False,
) -> None:
    """Each rule's accuracy over noise-eligible recipe pairs, by study 3's method or study 2's."""
    from zootriage.core.backtest.csv_runs import read_runs
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
        result = _analyse(method, runs, names, n_boot, n_perm, seed)
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
    out = Console()
    out.print(_table(result, len(runs), outcome))
    for note in result["notes"]:
        out.print(f"note: {escape(note)}")


def register(app: typer.Typer) -> None:
    app.command("backtest")(backtest)
