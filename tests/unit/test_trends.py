"""Trends without a database: the drift verdict's threshold (|Δ| against c·√(se₁² + se₂²)), its
"cannot decide" cases, the trend plot's linked points and bands, and the ``trend`` command's lightness."""

from __future__ import annotations

import math
import re
import uuid
from datetime import UTC, datetime

import pytest
from scipy import stats

from tests.unit.test_client_light import UNREACHABLE, run_client
from zootriage.app.cli.trends import exit_status
from zootriage.app.schemas.trends import Drift, TrendPoint
from zootriage.app.services.errors import ServiceError
from zootriage.app.services.trends import MARKERS_MAX, critical_value, drift, resolve_markers
from zootriage.app.ui.plots import TrendPanel, marker_trends
from zootriage.core.noise import Estimate

Z = float(stats.norm.ppf(0.975))


def _point(index: int, estimate: Estimate, decidable: bool = True) -> TrendPoint:
    se = estimate.se
    return TrendPoint(
        index=index, run_id=uuid.uuid4(), short_id="abcdef12", label="r", name=None,
        created_at=datetime(2026, 1, 1, tzinfo=UTC), at=datetime(2026, 1, 1, tzinfo=UTC),
        value=estimate.value, std=None if se is None else se * 2, repeats=4, se=se,
        band=None if se is None else (estimate.value - se, estimate.value + se),
        decidable=decidable, reason=None if decidable else "degenerate regime", architecture=None,
        model={}, tags={},
    )


def _drift(first: Estimate, last: Estimate, decidable: bool = True) -> Drift:
    """The verdict on two points of a marker where higher is better."""
    return drift([_point(0, first), _point(1, last, decidable)], [first, last], True)


@pytest.mark.parametrize("factor, verdict", [(0.99, "within_noise"), (1.01, "drift")])
def test_the_threshold_is_z_times_the_combined_standard_error(factor: float, verdict: str) -> None:
    """With exact standard errors (infinite df) the critical value is the normal's z = 1.96: a change
    just under z·√(se₁² + se₂²) is within the noise, just over it is a drift."""
    se1, se2 = 0.03, 0.04
    combined = math.hypot(se1, se2)
    change = factor * Z * combined
    result = _drift(Estimate(1.0, se1, math.inf), Estimate(1.0 - change, se2, math.inf))
    assert result.verdict == verdict
    assert math.isclose(result.se, combined) and math.isclose(result.critical, Z)
    assert math.isclose(result.threshold, Z * combined)
    assert result.direction == "lower"
    assert result.better is (False if verdict == "drift" else None)


def test_few_repeats_hold_the_change_to_the_t_quantile() -> None:
    """Two runs of 3 repeats each and equal se: Welch's df is 4, so c = t₄(0.975) ≈ 2.78, not 1.96."""
    result = _drift(Estimate(1.0, 0.1, 2.0), Estimate(1.0, 0.1, 2.0))
    assert result.df == pytest.approx(4.0) and result.critical == pytest.approx(stats.t.ppf(0.975, 4))
    assert result.verdict == "within_noise" and result.direction == "same"
    assert critical_value(math.inf) == pytest.approx(Z)


def test_no_noise_estimate_no_decision_or_too_few_points_give_cannot_decide() -> None:
    unmeasured = _drift(Estimate(1.0, None, math.inf), Estimate(5.0, 0.01, 4.0))
    assert unmeasured.verdict == "cannot_decide" and "first point" in unmeasured.reason
    assert unmeasured.difference == 4.0 and unmeasured.p_value is None
    degenerate = _drift(Estimate(1.0, 0.01, 4.0), Estimate(5.0, 0.01, 4.0), decidable=False)
    assert degenerate.verdict == "cannot_decide" and "degenerate regime" in degenerate.reason
    alone = drift([_point(0, Estimate(1.0, 0.01, 4.0))], [Estimate(1.0, 0.01, 4.0)], True)
    assert alone.verdict == "cannot_decide" and alone.difference is None


def test_markers_resolve_by_symbol_and_refuse_with_a_code() -> None:
    assert [spec.name for _, spec in resolve_markers(["d_eff", "dimension", "psi_eff"])] == [
        "dimension", "utilization"
    ]
    for asked, code in ((["nope"], "unknown_marker"), ([" "], "invalid_request"),
                        ([f"m{i}" for i in range(MARKERS_MAX + 1)], "too_many_markers")):
        with pytest.raises(ServiceError) as refused:
            resolve_markers(asked)
        assert refused.value.code == code and refused.value.status == 422


def test_the_plot_links_every_point_and_bands_only_what_has_a_noise_estimate() -> None:
    measured = [Estimate(v, se, 4.0) for v, se in ((1.0, 0.1), (1.2, 0.1), (1.1, None), (1.4, 0.2))]
    svg, drawn = marker_trends(
        ["$x^2$ <b>", "b", "c", "d"],
        [
            TrendPanel("dimension", [0, 1, 2, 3], measured, [f"/runs/{i}" for i in range(4)]),
            TrendPanel("utilization", [1, 3], [Estimate(0.3, None, 4.0)] * 2, ["/runs/1", "/runs/3"]),
        ],
    )
    assert drawn == 6
    points = svg[svg.index('id="points-dimension"'):svg.index('id="points-utilization"')]
    assert re.findall(r'xlink:href="(/runs/\d)"', points) == [f"/runs/{i}" for i in range(4)]
    bars = svg[svg.index('id="bars-dimension"'):]
    assert bars[:bars.index("</g>")].count("<path") == 3  # one bar per point with a standard error
    assert 'id="band-dimension"' in svg
    assert 'id="band-utilization"' not in svg and 'id="bars-utilization"' not in svg
    assert "$x^2$ &lt;b&gt;" in svg  # a run's label is drawn as text, never as mathtext or markup


def test_the_command_is_light_and_maps_verdicts_to_exit_statuses() -> None:
    answer = run_client("trend", "--marker", "d_eff", "--url", UNREACHABLE)
    assert answer["heavy"] == [] and answer["code"] == 2
    assert "cannot reach the service" in str(answer["output"])

    def verdicts(*names: str) -> dict[str, object]:
        return {"series": [{"drift": {"verdict": name}} for name in names]}

    assert exit_status(verdicts("within_noise", "within_noise")) == 0
    assert exit_status(verdicts("cannot_decide", "within_noise")) == 3
    assert exit_status(verdicts("cannot_decide", "drift")) == 1
