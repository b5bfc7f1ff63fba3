"""The report's figures: per task, recipe-mean D_eff and Ψ_eff against recipe-mean probe accuracy,
one panel per centring × marker, a colour per architecture (what H1 and H2 test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zootriage.core.backtest.measure import PRIMARY
from zootriage.core.backtest.tables import kept, recipe_rows


def recipe_scatter(results: dict[str, Any], task: str, path: Path) -> None:
    """Write the figure of ``task`` to ``path`` (PNG). matplotlib is imported here, and a bare
    ``Figure`` is used, so importing this module never selects a backend."""
    from matplotlib.figure import Figure

    centerings = results["config"]["markers"]["centerings"]
    markers = ("dimension", "utilization")
    models = kept([m for m in results["models"] if m["task"] == task and m["arm"] == "zoo"], None)
    fig = Figure(figsize=(3.4 * len(markers), 2.9 * len(centerings)))
    axes = fig.subplots(len(centerings), len(markers), squeeze=False)
    archs = sorted({m["arch"] for m in models})
    for row, centering in enumerate(centerings):
        rows = recipe_rows(kept(models, centering), centering, markers, [PRIMARY])
        for col, marker in enumerate(markers):
            ax = axes[row][col]
            for i, arch in enumerate(archs):
                points = [(r.means[marker], r.means[PRIMARY]) for r in rows if r.arch == arch]
                points = [(x, y) for x, y in points if x is not None]
                if points:
                    xs, ys = zip(*points, strict=True)
                    ax.scatter(xs, ys, s=16, color=f"C{i}", label=arch)
            ax.set_xlabel(f"{marker} ({centering})", fontsize=8)
            ax.set_ylabel("probe accuracy", fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=6)
    fig.suptitle(f"task {task}: recipe means", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
