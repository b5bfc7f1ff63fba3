"""``/trends`` in headless Chromium against the real API (uvicorn, no worker, runs stored as the worker
stores them): the server-drawn SVG has one linked point per run and marker, a band ±1 standard error
around the points that carry a noise estimate and none around those that do not, and the form
(project, markers) changes the chart; no console error, no request off the machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.integration.browser import chromium, watched_page
from tests.integration.stack import Stack
from tests.integration.trend_runs import trend_run

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture
def api_only(api_only_stack: Stack) -> Stack:
    """The session's API without a worker (conftest ``api_only_stack``): these tests store their runs
    in the database themselves and queue no job, so an API of their own (an import of torch) adds
    nothing."""
    return api_only_stack


def _hrefs(page: Page, marker: str) -> list[str]:
    links = page.locator(f"#trend-plot svg #points-{marker} a")
    return [links.nth(i).get_attribute("xlink:href") or "" for i in range(links.count())]


def _centre_y(page: Page, selector: str) -> list[float]:
    boxes = [page.locator(selector).nth(i).bounding_box() for i in range(page.locator(selector).count())]
    return [box["y"] + box["height"] / 2 for box in boxes if box is not None]


def test_the_chart_has_linked_points_and_noise_bands_and_the_form_changes_it(
    api_only: Stack, clean_db: str, tmp_path: Path
) -> None:
    vision = [
        trend_run(
            clean_db, f"vision-{day}", {"dimension": 10.0 + day, "utilization": 0.4 + day / 100},
            day=day, stds={"dimension": 0.5, "utilization": None}, projects=["vision"],
        )
        for day in range(4)
    ]
    audio = [
        trend_run(clean_db, f"a{day}", {"dimension": 3.0, "radius": 1.0 + day}, day=day, projects=["audio"])
        for day in range(2)
    ]
    with chromium() as browser:
        watched = watched_page(browser)
        page = watched.page
        page.goto(f"{api_only.base_url}/trends?project=vision")
        page.wait_for_selector("#trend-plot svg")
        assert page.locator("#trend-plot").get_attribute("data-points") == "8"  # d_eff and psi_eff × 4
        assert _hrefs(page, "dimension") == [f"/runs/{run_id}" for run_id in vision]  # in time order
        assert _hrefs(page, "utilization") == [f"/runs/{run_id}" for run_id in vision]

        band = page.locator("#trend-plot svg #band-dimension use")  # matplotlib: a <use> of a <defs> path
        assert band.count() == 1
        box = band.bounding_box()
        assert box is not None and box["height"] > 0
        centres = _centre_y(page, "#trend-plot svg #points-dimension a use")
        assert len(centres) == 4
        assert all(box["y"] <= y <= box["y"] + box["height"] for y in centres)  # the band is around them
        assert page.locator("#trend-plot svg #bars-dimension path").count() == 4  # a bar on each point
        # Ψ_eff was stored without a std: drawn, but with no band and no bar, and no verdict.
        assert page.locator("#trend-plot svg #band-utilization").count() == 0
        assert page.locator("#trend-plot svg #bars-utilization").count() == 0
        assert page.locator("#trend-utilization .drift").get_attribute("data-verdict") == "cannot_decide"
        assert page.locator("#trend-dimension .drift").get_attribute("data-verdict") == "drift"
        first = page.locator("#trend-dimension tr.point").first
        assert first.locator("td.value").inner_text() == "10 ± 0.5"
        page.screenshot(path=tmp_path / "trends-vision.png", full_page=True)

        assert page.locator("#t-project option").all_inner_texts()[1:] == ["audio", "default", "vision"]
        page.select_option("#t-project", "audio")
        page.uncheck("#t-markers input[value=utilization]")
        page.check("#t-markers input[value=radius]")
        page.click("#trends-form button[type=submit]")
        page.wait_for_url("**/trends?*project=audio*")
        page.wait_for_selector("#trend-plot svg #points-radius")
        assert "marker=radius" in page.url
        assert page.locator("#trend-plot").get_attribute("data-points") == "4"  # d_eff and radius × 2
        assert _hrefs(page, "radius") == [f"/runs/{run_id}" for run_id in audio]
        assert _hrefs(page, "dimension") == [f"/runs/{run_id}" for run_id in audio]
        assert page.locator("#trend-plot svg #points-utilization").count() == 0
        assert page.locator("#trend-plot svg #band-radius use").count() == 1
        assert page.locator("#t-markers input[value=radius]").is_checked()
        page.screenshot(path=tmp_path / "trends-audio.png", full_page=True)
        assert watched.problems() == []

        page.goto(f"{api_only.base_url}/trends?project=nope")
        page.wait_for_selector("p.error")
        assert page.locator("#t-project").input_value() == "nope"  # the form says what was asked
        assert "project_not_found" in page.locator("p.error").inner_text()
        assert page.locator("#trend-plot").count() == 0
        # The refusal is the page itself, answered 404: the one resource that failed to load.
        failed = "Failed to load resource: the server responded with a status of 404 (Not Found)"
        assert watched.problems() == [failed]
