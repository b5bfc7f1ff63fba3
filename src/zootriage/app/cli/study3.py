"""``zootriage study3 CONFIG.toml``: the confirmatory study (docs/study/PLAN-3.md).

- ``--time-only``: the plan's cost check; one epoch per architecture and task, no outcome, and the
  projected CPU-hours with the epoch factor that brings a projection above 7.0 down to 7.0.
- ``--shard K/N``: train and measure every N-th model from the K-th into ``--out``; no analysis.
- Without ``--shard``: finish what is missing, then analyse once and write ``results.json`` and
  ``report.md`` into ``--report-dir``, and the evidence document for the product (version 3,
  ``core.evidence.build_from_confirmatory``) to ``--evidence-out`` (default: ``evidence.json`` in the
  report folder; the shipped ``src/zootriage/core/evidence.json`` is replaced only when named).

A rerun with the same ``--out`` resumes. A bad config or argument prints its problem and exits 2.
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
from zootriage.app.cli.study2 import parse_shard
from zootriage.app.cli.terminal_text import escape

PLAN = Path("docs/study/PLAN-3.md")
FROZEN = Path("docs/study/plan3_frozen_rule.json")


def registration_commit() -> str:
    """The commit that added the plan (its registration), or ``"unknown"`` outside a checkout."""
    try:
        done = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%H", "--", str(PLAN)],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    lines = done.stdout.split()
    return lines[-1] if lines else "unknown"


def study3(
    config: Annotated[Path, typer.Argument(help="study config (TOML), e.g. studies/confirmatory.toml")],
    out: Annotated[Path | None, typer.Option(help="state folder: checkpoints and per-model records")] = None,
    report_dir: Annotated[Path | None, typer.Option(help="report folder (default: OUT/report-DATE)")] = None,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:1, ...")] = "auto",
    threads: Annotated[int, typer.Option(help="CPU threads for torch and BLAS (the plan: 1)")] = 1,
    time_only: Annotated[bool, typer.Option("--time-only", help="the plan's cost check only")] = False,
    shard: Annotated[str | None, typer.Option(help="K/N: train only every N-th model from the K-th")] = None,
    frozen_rule: Annotated[Path, typer.Option(help="the registered frozen rule")] = FROZEN,
    evidence_out: Annotated[
        Path | None, typer.Option(help="where to write the evidence file (default: REPORT_DIR/evidence.json)")
    ] = None,
) -> None:
    """The confirmatory study: does any marker beat ID accuracy, and the recipe?"""
    from zootriage.core.backtest.config import Study3Config, load_config
    from zootriage.core.backtest.study3_report import build_results3, registration_changes, write_report3
    from zootriage.core.backtest.study3_run import run_study3
    from zootriage.core.backtest.study3_run import time_only as time_grid
    from zootriage.core.evidence import build_from_confirmatory, write_evidence

    err = Console(stderr=True)
    try:
        if threads < 1:
            raise ValueError(f"--threads must be >= 1, got {threads}")
        cfg = load_config(config, Study3Config)
        if time_only:
            typer.echo(
                json.dumps(time_grid(cfg, device=device, threads=threads, progress=err.print), indent=1)
            )
            return
        if not frozen_rule.is_file():
            raise ValueError(f"no frozen rule at {frozen_rule}")
        state = out or Path("study-runs") / cfg.name
        run = run_study3(
            cfg, state, device=device, threads=threads, progress=err.print, shard=parse_shard(shard)
        )
        if run is None:
            err.print(f"shard {shard} done; run again without --shard for the analysis and report")
            return
        changes = registration_changes(PLAN.read_text()) if PLAN.is_file() else ""
        results = build_results3(
            run, cfg, plan_commit=registration_commit(), frozen_path=frozen_rule, changes=changes
        )
        folder = report_dir or state / f"report-{dt.date.today().isoformat()}"
        path = write_report3(
            results, folder, title=f"Confirmatory study '{cfg.name}' ({dt.date.today().isoformat()})"
        )
        evidence = write_evidence(build_from_confirmatory(results), evidence_out or folder / "evidence.json")
    except ValueError as exc:
        err.print(f"[red]error[/red] bad_study: {escape(str(exc))}")
        raise typer.Exit(BAD_INPUT) from None
    err.print(f"report written to {path}; evidence (version 3) to {evidence}")


def register(app: typer.Typer) -> None:
    app.command("study3")(study3)
