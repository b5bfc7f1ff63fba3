"""``zootriage study CONFIG.toml``: train the back-test zoo, measure markers and OOD transfer, report.

A rerun with the same ``--out`` resumes: finished models are skipped, a model interrupted mid-training
resumes from its last epoch. A bad config prints its problem and exits with status 2.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from zootriage.app.cli.exits import BAD_INPUT


def study(
    config: Annotated[Path, typer.Argument(help="study config (TOML), e.g. studies/default.toml")],
    out: Annotated[Path | None, typer.Option(help="state folder: checkpoints and per-model results")] = None,
    report_dir: Annotated[Path | None, typer.Option(help="report folder (default: OUT/report-DATE)")] = None,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:1, ...")] = "auto",
    threads: Annotated[int, typer.Option(help="CPU threads for torch (0: torch's default)")] = 0,
) -> None:
    """Does ID geometry predict OOD transfer? Train a zoo on MNIST and back-test every marker."""
    import torch

    from zootriage.core.study.analysis import analyze_study
    from zootriage.core.study.config import load_config
    from zootriage.core.study.report import write_report
    from zootriage.core.study.run import run_study

    err = Console(stderr=True)
    try:
        cfg = load_config(config)
        if threads < 0:
            raise ValueError(f"--threads must be >= 0, got {threads}")
        if threads:
            torch.set_num_threads(threads)
        state = out or Path("study-runs") / cfg.name
        results = run_study(cfg, state, device=device, progress=err.print)
        analysis = analyze_study(results, n_boot=cfg.n_boot, seed=cfg.seed)
        folder = report_dir or state / f"report-{dt.date.today().isoformat()}"
        write_report(
            results, analysis, folder, title=f"Back-test study '{cfg.name}' ({dt.date.today().isoformat()})"
        )
    except ValueError as exc:
        err.print(f"[red]error[/red] bad_study: {escape(str(exc))}")
        raise typer.Exit(BAD_INPUT) from None
    err.print(f"report written to {folder / 'report.md'}")


def register(app: typer.Typer) -> None:
    app.command("study")(study)
