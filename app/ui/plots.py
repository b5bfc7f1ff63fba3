"""Plot specifications as plain plotly JSON (data + layout), drawn in the page by plotly.js.

No figure objects are built server-side: a scatter is a handful of arrays, and the browser already
holds the library that draws them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.noise import Estimate


def error_bar(estimates: Sequence[Estimate | None]) -> dict[str, Any]:
    """±1 standard error of each point (0 where the noise is exact or unmeasured, and said so in hover)."""
    return {"type": "data", "array": [(e.se or 0.0) if e else 0.0 for e in estimates], "visible": True}


def marker_scatter(
    labels: Sequence[str],
    links: Sequence[str],
    x: Sequence[Estimate | None],
    y: Sequence[Estimate | None],
    colour: Sequence[float | None],
    axes: tuple[str, str, str],
) -> dict[str, Any]:
    """One point per run: ``axes`` names (x, y, colour); points missing x or y are left out."""
    kept = [i for i in range(len(labels)) if x[i] is not None and y[i] is not None]
    trace = {
        "type": "scatter",
        "mode": "markers",
        "x": [x[i].value for i in kept],  # type: ignore[union-attr]
        "y": [y[i].value for i in kept],  # type: ignore[union-attr]
        "error_x": error_bar([x[i] for i in kept]),
        "error_y": error_bar([y[i] for i in kept]),
        "text": [labels[i] for i in kept],
        "customdata": [links[i] for i in kept],
        "marker": {
            "size": 12,
            "color": [colour[i] for i in kept],
            "colorscale": "Viridis",
            "showscale": True,
            "colorbar": {"title": {"text": axes[2]}},
        },
        "hovertemplate": "%{text}<br>" + axes[0] + "=%{x:.4g}<br>" + axes[1] + "=%{y:.4g}<extra></extra>",
    }
    layout = {
        "xaxis": {"title": {"text": axes[0]}},
        "yaxis": {"title": {"text": axes[1]}},
        "margin": {"t": 20, "r": 10},
        "height": 420,
    }
    return {"data": [trace], "layout": layout}
