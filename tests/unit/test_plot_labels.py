"""Plot labels are user text: drawn literally, never parsed as matplotlib mathtext."""

from __future__ import annotations

from zootriage.app.ui.plots import marker_scatter
from zootriage.core.noise import Estimate

LABELS = ["$\\undefinedmacro{x}$", "$x^2$ & <b>", "plain"]


def test_math_looking_labels_are_drawn_as_text() -> None:
    points = [Estimate(float(i), 0.1, 4.0) for i in range(3)]
    svg, drawn = marker_scatter(
        LABELS, ["/runs/a", "/runs/b", "/runs/c"], points, points, [0.5, None, 0.9],
        ("dimension", "utilization", "id_accuracy"), title="$\\frac{$",
    )
    assert drawn == 3
    assert "$\\undefinedmacro{x}$" in svg and "$x^2$ &amp; &lt;b&gt;" in svg and "$\\frac{$" in svg
