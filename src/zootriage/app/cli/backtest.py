"""``zootriage backtest FILE.csv``: does each marker predict the measured outcome on your own zoo?

The CSV has a row per model: a model column (``model`` or ``id``), an ``architecture`` column, the
outcome column (``--outcome``, default ``ood_accuracy``) and one numeric column per marker (the runs
CSV export with an outcome column added works as is). Bad input exits with status 2, no traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from zootriage.app.cli.exits import BAD_INPUT


def _rate(rate: dict[str, float]) -> str:
    if not rate["pairs"]:
        return "no pairs"
    return f"{rate['wins']:.0%} / {rate['losses']:.0%} / {rate['undecided']:.0%} ({rate['pairs']:.0f})"


def _ci(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "–"
    return f"{value:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else f"{value:+.2f}"


def backtest(
    file: Annotated[Path, typer.Argument(help="CSV: a row per model with its markers and its outcome")],
    outcome: Annotated[str, typer.Option(help="column holding the measured OOD outcome")] = "ood_accuracy",
    architecture: Annotated[
        str, typer.Option(help="column naming each model's architecture")
    ] = "architecture",
    model: Annotated[str | None, typer.Option(help="model label column (default: model, else id)")] = None,
    n_boot: Annotated[int, typer.Option(help="bootstrap resamples for the 95% intervals")] = 2000,
    seed: Annotated[int, typer.Option(help="bootstrap seed")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print every number as JSON")] = False,
) -> None:
    """Correlations (Pearson, Spearman, bootstrap 95% CIs) and pairwise win rates of every marker."""
    from zootriage.core.study.csv_records import read_records
    from zootriage.core.study.stats import backtest as run_backtest

    err = Console(stderr=True)
    try:
        records, skipped = read_records(file, outcome=outcome, architecture=architecture, model=model)
        result = run_backtest(records, n_boot=n_boot, seed=seed).to_dict()
    except ValueError as exc:
        err.print(f"[red]error[/red] bad_backtest: {escape(str(exc))}")
        raise typer.Exit(BAD_INPUT) from None
    if skipped:
        err.print(f"skipped non-numeric columns: {', '.join(skipped)}")
    if as_json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
        return
    table = Table(title=f"{result['n_models']} models {result['architectures']} against {outcome}")
    for column in (
        "marker",
        "n",
        "Pearson r [95% CI]",
        "Spearman ρ [95% CI]",
        "pick higher: win/lose/undecided",
    ):
        table.add_column(column)
    for name, m in result["markers"].items():
        pooled = m["pooled"]
        table.add_row(
            name,
            str(pooled["n"]),
            _ci(pooled["pearson"], pooled["pearson_ci"]),
            _ci(pooled["spearman"], pooled["spearman_ci"]),
            _rate(m["pairwise"]),
        )
    out = Console()
    out.print(table)
    if result["geometry_rule"] is not None:
        out.print(f"geometry rule (D_eff and Ψ_eff both higher): {_rate(result['geometry_rule'])}")
    for note in result["notes"]:
        out.print(f"note: {note}")


def register(app: typer.Typer) -> None:
    app.command("backtest")(backtest)
