"""Plots drawn on the server as inline SVG (matplotlib's SVG canvas): no plotting JavaScript at all.

A page with a plot costs its SVG (tens of kB) instead of a multi-MB charting bundle, renders without
scripts, and every point is a link to the run it stands for (matplotlib writes each point of a
collection with a URL as an ``<a>`` element). Error bars are ±1 standard error of the repeat means
(``core.noise.Estimate.se``); a point without a measured noise has none, and its hover title says so.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import matplotlib
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

from zootriage.core.noise import Estimate


def _se(estimate: Estimate) -> float:
    return estimate.se if estimate.se is not None and math.isfinite(estimate.se) else 0.0


def marker_scatter(
    labels: Sequence[str],
    links: Sequence[str],
    x: Sequence[Estimate | None],
    y: Sequence[Estimate | None],
    colour: Sequence[float | None],
    axes: tuple[str, str, str],
    title: str | None = None,
) -> tuple[str, int]:
    """One point per run, linked to ``links[i]``; ``axes`` names (x, y, colour). Runs missing x or y
    are left out; a value with no standard error (``se`` None) gets no error bar. Returns the SVG text
    (no XML prologue, ready to inline) and the number of points."""
    kept = [i for i in range(len(labels)) if x[i] is not None and y[i] is not None]
    xs = [x[i].value for i in kept]  # type: ignore[union-attr]
    ys = [y[i].value for i in kept]  # type: ignore[union-attr]
    # Text stays text (selectable, small) rather than paths; a fixed salt makes the SVG's ids stable.
    # Labels are user text (run names, architecture labels): drawn literally, never parsed as mathtext,
    # where ``$\undefined$`` would raise and a crafted expression could cost the server's time.
    with matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": "zootriage", "font.size": 10, "text.parse_math": False}
    ):
        fig = Figure(figsize=(7, 4.2), layout="constrained")
        FigureCanvasSVG(fig)
        ax = fig.subplots()
        if any(e is not None and e.se is not None for e in (*x, *y)):
            ax.errorbar(
                xs, ys,
                xerr=[_se(x[i]) for i in kept],  # type: ignore[arg-type]
                yerr=[_se(y[i]) for i in kept],  # type: ignore[arg-type]
                fmt="none", ecolor="#555", elinewidth=1, capsize=3, zorder=1,
            )
        shades = [colour[i] for i in kept]
        known = [c for c in shades if c is not None]
        points = ax.scatter(
            xs, ys, s=70, zorder=2, edgecolors="#222", linewidths=0.6, cmap="viridis" if known else None,
            c=[c if c is not None else math.nan for c in shades] if known else "#3b6fb6",
            plotnonfinite=True,
        )
        points.set_urls([links[i] for i in kept])
        points.set_gid("points")
        if known:
            fig.colorbar(points, ax=ax, label=axes[2])
        for i, xv, yv in zip(kept, xs, ys, strict=True):
            ax.annotate(labels[i], (xv, yv), xytext=(5, 4), textcoords="offset points", fontsize=8)
        ax.set_xlabel(axes[0])
        ax.set_ylabel(axes[1])
        if title:
            ax.set_title(title)
        ax.grid(alpha=0.3)
        out = io.StringIO()
        fig.savefig(out, format="svg")
    text = out.getvalue()
    return text[text.index("<svg"):], len(kept)
