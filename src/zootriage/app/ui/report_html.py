"""A run's report as one HTML file that needs nothing else: the pages' style sheet inlined, the
geometry plot drawn as inline SVG (``app.ui.plots``), every link a fragment of the file itself.

The plot is the compare page's plane (D_eff against Ψ_eff, error bars ±1 se = std/√R); its point
links to the markers table (``#markers``, in the same tab). matplotlib's SVG carries a ``<metadata>``
block naming RDF vocabularies by URL and namespace declarations (``xmlns``, ``xmlns:xlink``) that SVG
inlined in HTML does not need (the HTML parser puts ``svg`` and ``xlink:href`` in their namespaces
itself); both are dropped, so that the file names no address at all.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from zootriage.app.schemas.reports import MarkerReport, RunReport
from zootriage.app.ui.plots import marker_scatter
from zootriage.app.ui.templating import templates
from zootriage.core.noise import Estimate

STYLE = Path(__file__).parent / "static" / "style.css"
AXES = ("dimension", "utilization")  # the compare page's default plane
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
_NAMESPACES = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')


@lru_cache(maxsize=1)
def _css() -> str:
    return STYLE.read_text()


def _estimate(marker: MarkerReport | None) -> Estimate | None:
    if marker is None or marker.value is None:
        return None
    return Estimate(marker.value, marker.se, marker.df if marker.df is not None else float("inf"))


def geometry_plot(report: RunReport) -> str | None:
    """The run in the (D_eff, Ψ_eff) plane as inline SVG, or None when it lacks either value."""
    by_name = {marker.name: marker for marker in report.markers}
    x, y = _estimate(by_name.get(AXES[0])), _estimate(by_name.get(AXES[1]))
    if x is None or y is None:
        return None
    svg, _ = marker_scatter(
        [report.label], ["#markers"], [x], [y], [None], (AXES[0], AXES[1], ""), title=None
    )
    head, rest = svg.split(">", 1)  # the root <svg ...> tag, then its content
    return _NAMESPACES.sub("", head) + ">" + _METADATA.sub("", rest).replace(' target="_blank"', "")


def report_html(report: RunReport) -> str:
    """The whole report as HTML text (templates/report.html)."""
    template = templates.env.get_template("report.html")
    return template.render(r=report, css=_css(), figure=geometry_plot(report), axes=AXES)
