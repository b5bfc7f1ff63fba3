"""The labels form of a run's page in headless Chromium against the real stack: a plain form (no script
needed) that renames and retags the run, shows a refusal beside the form, and leaves no console error."""

from __future__ import annotations

import pytest

from tests.integration.browser import chromium, watched_page
from tests.integration.stack import Stack
from tests.integration.stored_runs import stored_run
from zootriage.app.db.models import Run
from zootriage.app.db.session import session_scope

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_the_run_page_form_renames_and_retags_the_run(stack: Stack, clean_db: str) -> None:
    run_id = stored_run(clean_db, "browser-labels", {"dimension": 2.0})
    with chromium() as browser:
        watched = watched_page(browser)
        page = watched.page
        page.goto(f"{stack.base_url}/runs/{run_id}")
        page.fill("#label-name", "named in the browser")
        page.fill("#label-tags", "team=web, stage=ci")
        page.click("#labels-form button[type=submit]")
        page.wait_for_selector("#run-name")
        assert watched.problems() == []
        assert page.locator("#run-name").inner_text() == "named in the browser"
        assert page.locator("#run-tags").inner_text() == "stage=ci team=web"
        assert page.input_value("#label-tags") == "stage=ci, team=web"

        page.fill("#label-tags", "Team=web")
        page.click("#labels-form button[type=submit]")
        page.wait_for_selector("#labels-error:not(:empty)")
        alert = page.locator("#labels-error").inner_text()
        assert alert.startswith("invalid_request: tags: tag key 'Team'"), alert
        # The refused post's own 422 is the only thing the console reports.
        assert watched.problems() == [
            "Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"
        ]
        phone = watched_page(browser, width=390, height=844)
        phone.page.goto(f"{stack.base_url}/runs/{run_id}")
        overflow = phone.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0 and phone.problems() == []  # the form fits a phone screen
    with session_scope(clean_db) as session:
        run = session.get(Run, run_id)
        assert run is not None
        assert (run.name, run.tag_map) == ("named in the browser", {"stage": "ci", "team": "web"})
