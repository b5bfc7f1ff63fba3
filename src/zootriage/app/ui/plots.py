"""Plots drawn on the server as inline SVG (matplotlib's SVG canvas): no plotting JavaScript at all.

A page with a plot costs its SVG (tens of kB) instead of a multi-MB charting bundle, renders without
scripts, and every point is a link to the run it stands for (matplotlib writes each point of a
collection with a URL as an ``<a>`` element). Error bars are ±1 standard error of the repeat means
(``core.noise.Estimate.se``); a point without a measured noise has none, and its hover title says so.

matplotlib is imported by the first figure drawn (``_figure``, ``_style``), not with this module: the
API starts without it and loads it on the first request for a page with a plot.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zootriage.core.noise import Estimate

if TYPE_CHECKING:
    from matplotlib.figure import Figure


# Text stays text (selectable, small) rather than paths; a fixed salt makes the SVG's ids stable.
# Labels are user text (run names, architecture labels): drawn literally, never parsed as mathtext,
# where ``$\undefined$`` would raise and a crafted expression could cost the server's time.
def _style() -> AbstractContextManager[None]:
    import matplotlib

    return matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": "zootriage", "font.size": 10, "text.parse_math": False}
    )


def _figure(**options: Any) -> Figure:
    """A figure on matplotlib's SVG canvas (``options``: ``Figure``'s, e.g. ``figsize``)."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    fig = Figure(**options)
    FigureCanvasSVG(fig)
    return fig


def _svg(fig: Figure) -> str:
    """The figure as SVG text without the XML prologue, ready to inline (call inside ``_style()``)."""
    out = io.StringIO()
    fig.savefig(out, format="svg")
    text = out.getvalue()
    return text[text.index("<svg"):]


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
    with _style():
        fig = _figure(figsize=(7, 4.2), layout="constrained")
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
        return _svg(fig), len(kept)


@dataclass(frozen=True)
class TrendPanel:
    """One marker's series for ``marker_trends``: ``positions[i]`` indexes the shared x ticks (the
    selected runs in order), ``estimates[i]`` is the value there and ``links[i]`` the run it stands for."""

    marker: str
    positions: Sequence[int]
    estimates: Sequence[Estimate]
    links: Sequence[str]
    title: str = ""


TICKS_MAX = 12  # x labels drawn at most; the others are thinned out evenly


def marker_trends(ticks: Sequence[str], panels: Sequence[TrendPanel]) -> tuple[str, int]:
    """One panel per marker over one x axis (``ticks``, the runs in order), each point linked to its
    run. Around each point its band value ± se (``Estimate.se``): a shaded band joining neighbours that
    both have one, and a bar on each, so an isolated point shows its band too. A point without a
    measured noise is drawn hollow with neither. The SVG holds ``<g id="points-MARKER">`` (one ``<a>`` per
    point), ``<g id="band-MARKER">`` and ``<g id="bars-MARKER">``. Returns the SVG text and the number of
    points drawn."""
    drawn = 0
    with _style():
        fig = _figure(figsize=(8, 0.6 + 2.3 * max(len(panels), 1)), layout="constrained")
        axes = fig.subplots(max(len(panels), 1), 1, sharex=True, squeeze=False)[:, 0]
        for ax, panel in zip(axes, panels, strict=False):
            xs = list(panel.positions)
            ys = [e.value for e in panel.estimates]
            measured = [e.se is not None and math.isfinite(e.se) for e in panel.estimates]
            pairs = list(zip(panel.estimates, measured, strict=True))
            low = [e.value - _se(e) if ok else math.nan for e, ok in pairs]
            high = [e.value + _se(e) if ok else math.nan for e, ok in pairs]
            if any(measured):
                band = ax.fill_between(xs, low, high, color="#3b6fb6", alpha=0.18, linewidth=0, zorder=1)
                band.set_gid(f"band-{panel.marker}")
                kept = [i for i, ok in enumerate(measured) if ok]
                bars = ax.errorbar(
                    [xs[i] for i in kept], [ys[i] for i in kept],
                    yerr=[_se(panel.estimates[i]) for i in kept],
                    fmt="none", ecolor="#3b6fb6", elinewidth=1, capsize=3, zorder=2,
                )
                bars.lines[2][0].set_gid(f"bars-{panel.marker}")
            ax.plot(xs, ys, color="#3b6fb6", linewidth=1, zorder=2)
            faces = ["#3b6fb6" if ok else "white" for ok in measured]
            points = ax.scatter(xs, ys, s=40, c=faces, edgecolors="#222", linewidths=0.8, zorder=3)
            points.set_urls(list(panel.links))
            points.set_gid(f"points-{panel.marker}")
            drawn += len(xs)
            ax.set_ylabel(panel.marker)
            ax.ticklabel_format(axis="y", useOffset=False)  # values as they are, not as "+3" and offsets
            if panel.title:
                ax.set_title(panel.title, fontsize=9, loc="left")
            ax.grid(alpha=0.3)
        step = max(1, math.ceil(len(ticks) / TICKS_MAX))
        shown = list(range(0, len(ticks), step))
        axes[-1].set_xticks(shown, [ticks[i] for i in shown], rotation=30, ha="right", fontsize=8)
        axes[-1].set_xlim(-0.5, max(len(ticks) - 0.5, 0.5))
        return _svg(fig), drawn
