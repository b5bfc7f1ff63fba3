"""``zootriage study2-recheck RESULTS.json``: the corrected report of a finished pre-registered study
(:mod:`core.backtest.recheck`), written beside the first one, which stays as it was.

It reads the study's ``results.json`` (config, per-model records, splits, registered decision) and
the records the BatchNorm fix replaced (a JSON list, recovered with ``git show``), recomputes the
registered tests with decisive Monte Carlo p-values and the additions, and writes ``recheck.json``
and ``report.md``. The commits it cites come from git. Bad input exits with status 2.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from zootriage.app.cli.exits import BAD_INPUT
from zootriage.app.cli.terminal_text import escape

PLAN = Path("docs/study/PLAN.md")
RECORDS = Path("docs/study/preregistered-run/models")


def git_history(path: Path, *extra: str) -> list[dict[str, str]]:
    """Commits that touched ``path``, oldest first (``[]`` outside a git checkout)."""
    try:
        done = subprocess.run(
            ["git", "log", "--reverse", *extra, "--format=%H%x09%ad%x09%s", "--date=iso", "--", str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return []
    rows = [line.split("\t", 2) for line in done.stdout.splitlines() if line.count("\t") >= 2]
    return [{"commit": h[:7], "date": d, "subject": s} for h, d, s in rows]


def _commit(history: list[dict[str, str]], prefix: str) -> dict[str, str]:
    for c in history:
        if c["commit"].startswith(prefix[:7]):
            return c
    return {"commit": prefix[:7], "date": "unknown", "subject": ""}


def _load(path: Path, what: str) -> Any:
    if not path.is_file():
        raise ValueError(f"no {what} at {path}")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None


def study2_recheck(
    results: Annotated[
        Path, typer.Argument(help="the study's results.json, e.g. docs/study/2026-12-02/results.json")
    ],
    before_fix: Annotated[Path, typer.Option(help="JSON list of the records the BatchNorm fix replaced")],
    report_dir: Annotated[Path, typer.Option(help="folder for report.md and recheck.json")],
    fix_commit: Annotated[str, typer.Option(help="the commit of the BatchNorm fix")] = "5946d05",
    retrained_commit: Annotated[str, typer.Option(help="the commit of the retrained records")] = "3f8a613",
    max_draws: Annotated[int, typer.Option(help="most Monte Carlo draws per test")] = 40_960_000,
) -> None:
    """Corrected report of a finished pre-registered study: decisive p-values, H4 before and after the
    BatchNorm fix with baselines and an exact architecture-level test, undecided picks apart."""
    from zootriage.core.backtest.config import StudyConfig
    from zootriage.core.backtest.recheck import recheck
    from zootriage.core.backtest.recheck_report import render

    err = Console(stderr=True)
    try:
        if max_draws < 10_000:
            raise ValueError(f"--max-draws must be >= 10000 (the plan's own draws), got {max_draws}")
        data = _load(results, "results file")
        old = _load(before_fix, "records file")
        if not isinstance(data, dict) or not {"config", "models", "splits", "decision"} <= set(data):
            raise ValueError(f"{results} is not a study results.json (config, models, splits, decision)")
        if not isinstance(old, list) or not all(isinstance(m, dict) and "name" in m for m in old):
            raise ValueError(f"{before_fix} must be a JSON list of model records")
        config = StudyConfig.model_validate(data["config"])
        rc = recheck(
            data["models"],
            old,
            config,
            len(data["splits"]["A"]["probe_score"]),
            data["decision"],
            max_draws=max_draws,
            progress=err.print,
        )
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        err.print(f"[red]error[/red] bad_recheck: {escape(str(exc))}")
        raise typer.Exit(BAD_INPUT) from None
    plan = git_history(PLAN, "--follow")
    fix = _commit(plan, fix_commit)
    provenance = {
        "old_report": str(results.parent / "report.md"),
        "results": str(results),
        "command": (
            f"zootriage study2-recheck {results} --before-fix {before_fix} --report-dir {report_dir}"
            f" --max-draws {max_draws}"
        ),
        "registration": plan[0] if plan else {"commit": "unknown", "date": "unknown"},
        "plan_history": plan,
        "first_record": (
            git_history(RECORDS, "--diff-filter=A") or [{"commit": "unknown", "date": "unknown"}]
        )[0],
        "cited": str(data.get("plan_commit", "unknown"))[:7],
        "fix": {**fix, "retrained": retrained_commit[:7]},
        "before_fix_source": f"git show {fix_commit[:7]}^:{RECORDS}/<name>.json",
        "before_fix": str(before_fix),
    }
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "recheck.json").write_text(json.dumps({"provenance": provenance, **rc}, indent=1))
    title = f"Pre-registered back-test, corrected report ({dt.date.today().isoformat()})"
    (report_dir / "report.md").write_text(render(rc, provenance, title, config.stats.n_boot))
    err.print(f"report written to {report_dir / 'report.md'}")
