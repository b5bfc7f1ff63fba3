"""The studies' report writer family: the cell formatters and the Markdown table every report uses,
and :func:`write_report`, which writes a study's ``results.json``, its figures and ``report.md`` into one
folder. Each study brings its own ``render`` (study 2: :mod:`core.backtest.study2_report`, its corrected
report :mod:`core.backtest.recheck_report`; study 3: :mod:`core.backtest.study3_report`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from zootriage.core.backtest.run import write_json

MISSING = "–"


def num(value: float | None, fmt: str = ".2f") -> str:
    """``value`` in ``fmt``, or a dash when there is none."""
    return MISSING if value is None else format(value, fmt)


def interval(ci: Sequence[float] | None, fmt: str = ".2f") -> str:
    """``[lo, hi]`` in ``fmt``, or a dash when there is none."""
    return MISSING if not ci else f"[{format(ci[0], fmt)}, {format(ci[1], fmt)}]"


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines."""
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def run_record(run: Mapping[str, Any], config: BaseModel) -> dict[str, Any]:
    """What ``results.json`` keeps of a finished run: the config, splits, probe states, floors and
    per-model records."""
    return {
        "config": config.model_dump(mode="json"),
        **{key: run[key] for key in ("splits", "probe", "floors", "models")},
    }


def write_report(
    results: Mapping[str, Any],
    folder: Path,
    text: Callable[[Sequence[tuple[str, str]]], str],
    *,
    figures: Mapping[str, Callable[[Path], None]] | None = None,
) -> Path:
    """``results.json`` (written atomically), each figure ``name`` drawn by ``figures[name](path)``, and
    ``report.md`` = ``text(figures written as (label, file name))``, into ``folder``; the report's path."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "results.json", results)
    drawn = []
    for name, draw in (figures or {}).items():
        draw(folder / name)
        drawn.append((name, name))
    path = folder / "report.md"
    path.write_text(text(drawn))
    return path
