"""``zootriage study2 CONFIG.toml``: the pre-registered back-test (docs/study/PLAN.md).

Trains the zoo of both tasks and the v1/v2 arm, measures every model, applies the plan's statistics
and decision rule and writes ``results.json``, ``report.md`` and figures. A rerun with the same
``--out`` resumes (finished models are skipped, an interrupted one resumes from its last epoch).
``--time-only`` is the plan's cost check: one model per architecture for one epoch, and the projected
total. A bad config prints its problem and exits with status 2.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from zootriage.app.cli.exits import BAD_INPUT
from zootriage.app.cli.terminal_text import escape

PLAN = Path("docs/study/PLAN.md")


def plan_commit() -> str:
    """The commit that last changed the plan, or ``"unknown"`` outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "log", "-1", "--format=%H", "--", str(PLAN)], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"K/N"`` → (K, N); raises ValueError on anything else."""
    if text is None:
        return None
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit()):
        raise ValueError(f"--shard must look like 2/3, got {text!r}")
    return int(k), int(n)


def study2(
    config: Annotated[Path, typer.Argument(help="study config (TOML), e.g. studies/preregistered.toml")],
    out: Annotated[Path | None, typer.Option(help="state folder: checkpoints and per-model records")] = None,
    report_dir: Annotated[Path | None, typer.Option(help="report folder (default: OUT/report-DATE)")] = None,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:1, ...")] = "auto",
    threads: Annotated[int, typer.Option(help="CPU threads for torch and BLAS (the plan: 1-2)")] = 2,
    time_only: Annotated[bool, typer.Option("--time-only", help="time one epoch per architecture")] = False,
    shard: Annotated[
        str | None, typer.Option(help="K/N: train only every N-th model from the K-th; no report")
    ] = None,
) -> None:
    """The pre-registered back-test: does ID geometry predict class-level transfer?"""
    from zootriage.core.backtest.config import load_config
    from zootriage.core.backtest.run import run_study
    from zootriage.core.backtest.run import time_only as time_grid
    from zootriage.core.backtest.study2_report import build_results, write_report2

    err = Console(stderr=True)
    try:
        if threads < 1:
            raise ValueError(f"--threads must be >= 1, got {threads}")
        cfg = load_config(config)
        if time_only:
            timing = time_grid(cfg, device=device, threads=threads, progress=err.print)
            typer.echo(json.dumps(timing, indent=1))
            return
        state = out or Path("study-runs") / cfg.name
        run = run_study(
            cfg, state, device=device, threads=threads, progress=err.print, shard=parse_shard(shard)
        )
        if run is None:
            err.print(f"shard {shard} done; run again without --shard for the report")
            return
        results = build_results(run, cfg, plan_commit=plan_commit())
        folder = report_dir or state / f"report-{dt.date.today().isoformat()}"
        write_report2(
            results, folder, title=f"Pre-registered back-test '{cfg.name}' ({dt.date.today().isoformat()})"
        )
    except ValueError as exc:
        err.print(f"[red]error[/red] bad_study: {escape(str(exc))}")
        raise typer.Exit(BAD_INPUT) from None
    err.print(f"report written to {folder / 'report.md'}")


def register(app: typer.Typer) -> None:
    from zootriage.app.cli.study2_recheck import study2_recheck

    app.command("study2")(study2)
    app.command("study2-recheck")(study2_recheck)
