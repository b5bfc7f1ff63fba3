"""``zootriage trend``: is a marker drifting across our releases? A client command (httpx, typer, rich
only) over ``GET /v1/trends``: per marker, the runs in order with each value's std and band ±1 standard
error, then the drift verdict of the last point against the first (a two-sided Welch t-test at the
service's α), or "cannot decide" when a point has no noise estimate.

Exit status: 0 by default; with ``--fail-on-drift`` (for CI) 1 when a marker drifted beyond the noise,
3 when none did but one could not decide, as ``zootriage gate`` answers; 2 for a usage or service error.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from zootriage.app.cli.client import (
    DEFAULT_URL,
    FAILED,
    INCONCLUSIVE,
    PASSED,
    ApiKey,
    AsJson,
    Client,
    Url,
    _errors_exit,
    _fmt,
    _print_json,
    err,
    out,
)
from zootriage.app.cli.tables import Column, fitted_table
from zootriage.app.cli.terminal_text import escape

VERDICT = {
    "drift": "[red]DRIFT[/red]",
    "within_noise": "[green]within the noise[/green]",
    "cannot_decide": "[yellow]cannot decide[/yellow]",
}


def _band(point: dict[str, Any]) -> str:
    band = point["band"]
    return "-" if band is None else f"{band[0]:.6g} – {band[1]:.6g}"  # a band narrower than 4 digits shows


def _drift_line(series: dict[str, Any]) -> str:
    drift = series["drift"]
    better = drift["better"]
    judged = "" if better is None else " [green](better)[/green]" if better else " [red](worse)[/red]"
    return f"drift of {series['marker']}: {VERDICT[drift['verdict']]}{judged}: {escape(drift['reason'])}"


def exit_status(answer: dict[str, Any]) -> int:
    """For ``--fail-on-drift``: 1 if any marker drifted, else 3 if any could not decide, else 0."""
    verdicts = {series["drift"]["verdict"] for series in answer["series"]}
    if "drift" in verdicts:
        return FAILED
    return INCONCLUSIVE if "cannot_decide" in verdicts else PASSED


def trend(
    marker: Annotated[
        list[str] | None,
        typer.Option(help="a registry name, or d_eff, psi_eff, r_eff; repeat (default: d_eff, psi_eff)"),
    ] = None,
    project: Annotated[str | None, typer.Option(help="only this project's runs")] = None,
    alias: Annotated[str | None, typer.Option(help="follow this alias of --project, move by move")] = None,
    arch: Annotated[str | None, typer.Option(help="only this architecture")] = None,
    name_contains: Annotated[str | None, typer.Option(help="only runs whose name contains this")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="only key=value runs; repeat: all must hold")] = None,
    dataset: Annotated[str | None, typer.Option(help="only this dataset fingerprint")] = None,
    since: Annotated[str | None, typer.Option(help="ISO date or time, inclusive")] = None,
    limit: Annotated[int, typer.Option(min=2, help="the latest this many runs (or alias moves)")] = 50,
    fail_on_drift: Annotated[
        bool, typer.Option("--fail-on-drift", help="exit 1 on a drift beyond the noise, 3 on cannot decide")
    ] = False,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """A marker over time with its noise, and whether it drifted between the first and the last run."""
    with _errors_exit():
        given = {
            "marker": marker, "project": project, "alias": alias, "arch": arch,
            "name_contains": name_contains, "tag": tag, "dataset": dataset, "since": since,
        }
        params: dict[str, Any] = {"limit": limit, **{k: v for k, v in given.items() if v is not None}}
        answer = Client(url, api_key).call("GET", "/v1/trends", params=params).json()
    if as_json:
        _print_json(answer)
    else:
        _print_table(answer)
    if fail_on_drift:
        raise typer.Exit(exit_status(answer))


def _print_table(answer: dict[str, Any]) -> None:
    order = "the alias's moves" if answer["selection"]["order"] != "created_at" else "creation"
    more = f" (the latest {answer['selection']['limit']}; more matched)" if answer["truncated"] else ""
    out.print(f"{answer['runs']} runs in order of {order}{more}; band: {escape(answer['band'])}")
    layout = [
        Column("#", 3, priority=6, justify="right", no_wrap=True),
        Column("run", 8, priority=10, no_wrap=True),
        Column("label", 12, priority=7),
        Column("at", 16, priority=5, no_wrap=True),
        Column("value", 9, priority=9, justify="right", no_wrap=True),
        Column("± std", 9, priority=8, justify="right", no_wrap=True),
        Column("band ± se", 23, priority=4, justify="right", no_wrap=True),
        Column("note", 10, priority=3),
    ]
    for series in answer["series"]:
        asked = f", asked as {series['asked']}" if series["asked"] != series["marker"] else ""
        out.print(f"\n[bold]{series['marker']}[/bold] ({escape(series['description'])}{escape(asked)})")
        rows = []
        for point in series["points"]:
            note = "" if point["decidable"] else escape(point["reason"] or "")
            if point["se"] is None:
                note = "no noise estimate" + (f"; {note}" if note else "")
            rows.append([
                str(point["index"] + 1), point["short_id"], escape(point["label"]),
                point["at"][:16].replace("T", " "), _fmt(point["value"]), _fmt(point["std"]), _band(point),
                note,
            ])
        out.print(fitted_table(layout, rows, out.width))
        if series["missing"]:
            out.print(f"{series['missing']} selected runs have no value of {series['marker']}")
        out.print(_drift_line(series))
    for warning in answer["warnings"]:
        err.print(f"[yellow]note[/yellow] {escape(warning)}")


def register(app: typer.Typer) -> None:
    app.command()(trend)
