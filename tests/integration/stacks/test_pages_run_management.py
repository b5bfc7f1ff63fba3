"""Run management on the pages: the run page's description (in the labels form, shown with its line
breaks), its archive and restore buttons (behind the CSRF and write checks), and the history's name
search box and archived selector, through the same filter as ``GET /v1/runs``; the browser test drives
them in headless Chromium against the real stack."""

from __future__ import annotations

import html
import re
import uuid

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import expect

from tests.integration.browser import chromium, watched_page
from tests.integration.stack import Stack
from tests.integration.stored_runs import stored_run
from zootriage.app.db.models import Checkpoint, Run
from zootriage.app.db.session import session_scope

MARKERS: dict[str, float | None] = {"dimension": 2.0, "utilization": 0.4}


def named_run(database_url: str, name: str) -> uuid.UUID:
    return stored_run(database_url, f"pages-{uuid.uuid4()}", MARKERS, name=name)


def state(database_url: str, run_id: uuid.UUID) -> tuple[str | None, bool]:
    with session_scope(database_url) as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run.description, run.archived_at is not None


def listed(client: TestClient, query: str, ids: list[uuid.UUID]) -> set[uuid.UUID]:
    page = client.get(f"/runs?{query}")
    assert page.status_code == 200, page.text[-400:]
    return {run_id for run_id in ids if f'href="/runs/{run_id}"' in page.text}


def test_the_labels_form_sets_and_clears_the_description(client: TestClient, clean_db: str) -> None:
    run_id = named_run(clean_db, "described")
    client.get(f"/runs/{run_id}")
    token = client.cookies.get("zt_csrf")
    form = {"csrf": token, "name": "described", "tags": "", "description": "line one\r\nline <two>"}
    saved = client.post(f"/runs/{run_id}/labels", data=form, follow_redirects=False)
    assert saved.status_code == 303
    assert state(clean_db, run_id) == ("line one\nline <two>", False)  # CRLF kept as LF
    page = client.get(f"/runs/{run_id}").text
    assert '<p id="run-description" class="description">line one\nline &lt;two&gt;</p>' in page
    assert ">line one\nline &lt;two&gt;</textarea>" in page
    long = client.post(f"/runs/{run_id}/labels", data={**form, "description": "x" * 2001})
    assert long.status_code == 422 and "description" in html.unescape(long.text)
    assert "x" * 2001 in long.text  # the form comes back as sent
    blank = {**form, "description": "  "}
    cleared = client.post(f"/runs/{run_id}/labels", data=blank, follow_redirects=False)
    assert cleared.status_code == 303 and state(clean_db, run_id) == (None, False)
    assert 'id="run-description"' not in client.get(f"/runs/{run_id}").text


def test_the_archive_and_restore_buttons(client: TestClient, clean_db: str) -> None:
    run_id = named_run(clean_db, "button")
    page = client.get(f"/runs/{run_id}").text
    assert f'action="/runs/{run_id}/archive"' in page and 'id="run-archived"' not in page
    token = client.cookies.get("zt_csrf")
    forged = client.post(f"/runs/{run_id}/archive", data={"csrf": "stale"})
    assert forged.status_code == 403 and "csrf_failed" in forged.text and state(clean_db, run_id)[1] is False
    done = client.post(f"/runs/{run_id}/archive", data={"csrf": token}, follow_redirects=False)
    assert (done.status_code, done.headers["location"]) == (303, f"/runs/{run_id}")
    assert state(clean_db, run_id)[1] is True
    archived = client.get(f"/runs/{run_id}").text
    assert 'id="run-archived"' in archived and f'action="/runs/{run_id}/restore"' in archived
    client.post(f"/runs/{run_id}/restore", data={"csrf": token})
    assert state(clean_db, run_id)[1] is False
    missing = client.post(f"/runs/{uuid.uuid4()}/archive", data={"csrf": token})
    assert missing.status_code == 404 and "run_not_found" in missing.text


def test_the_history_searches_names_and_shows_archived_runs_on_request(
    client: TestClient, clean_db: str
) -> None:
    ids = [named_run(clean_db, name) for name in ("Baseline v1", "baseline_v2", "candidate")]
    client.post(f"/v1/runs/{ids[1]}/archive")
    assert listed(client, "", ids) == {ids[0], ids[2]}
    assert listed(client, "name_contains=BASE", ids) == {ids[0]}
    assert listed(client, "name_contains=BASE&archived=include", ids) == {ids[0], ids[1]}
    assert listed(client, "archived=only", ids) == {ids[1]}
    assert listed(client, "name_contains=e_v&archived=include", ids) == {ids[1]}  # _ is literal
    page = client.get("/runs?name_contains=base&archived=include").text
    assert 'id="f-name_contains"' in page and 'value="base"' in page
    assert '<option value="include" selected>' in page
    assert "name_contains=base" in page and "archived=include" in page  # the CSV link keeps both
    csv = client.get("/runs.csv?name_contains=base&archived=only").text.splitlines()
    assert [line.split(",")[0] for line in csv[1:]] == [str(ids[1])]
    assert re.search(r'<span class="tag archived">archived</span>', page)
    bad = client.get("/runs?archived=maybe")
    assert bad.status_code == 422


@pytest.mark.browser
def test_archiving_describing_and_searching_in_the_browser(stack: Stack, clean_db: str) -> None:
    run_id = named_run(clean_db, "Browser Search Target")
    other = named_run(clean_db, "unrelated")
    with session_scope(clean_db) as session:  # two pages of uploads
        session.add_all(
            Checkpoint(sha256=f"{i:064x}", size_bytes=2**20, format="torch", filename=f"w{i}.pt", tags={})
            for i in range(52)
        )
    with chromium() as browser:
        watched = watched_page(browser)
        page = watched.page
        page.goto(f"{stack.base_url}/runs/{str(run_id)[:8]}")  # a prefix lands on the full page
        assert page.url.endswith(f"/runs/{run_id}")
        page.fill("#label-description", "first line\nsecond line")
        page.click("#save-labels")
        page.wait_for_selector("#run-description")
        # the line break shows once the stylesheet's pre-wrap applies (under load the text can be
        # read before the stylesheet has arrived, and innerText then folds the break into a space)
        # (a locator's wait: a string predicate for wait_for_function is eval'd in the page when it
        # is not true at once, which the pages' CSP refuses)
        expect(page.locator("#run-description")).to_have_css("white-space", "pre-wrap")
        assert page.locator("#run-description").inner_text() == "first line\nsecond line"
        page.click("#archive-button")
        page.wait_for_selector("#run-archived")
        assert page.locator("#restore-button").is_visible()

        page.goto(f"{stack.base_url}/runs")
        page.fill("#f-name_contains", "search TARGET")
        page.click("form.filters button[type=submit]")
        page.wait_for_selector("#runs-table")
        assert page.locator("tr.run-row").count() == 0  # archived: hidden
        page.select_option("#f-archived", "include")
        page.click("form.filters button[type=submit]")
        page.wait_for_selector("tr.run-row")
        rows = page.locator("tr.run-row")
        assert rows.count() == 1 and "archived" in rows.first.inner_text()
        assert page.input_value("#f-name_contains") == "search TARGET"

        page.goto(f"{stack.base_url}/runs/{run_id}")
        page.click("#restore-button")
        page.wait_for_selector("#archive-button")
        page.goto(f"{stack.base_url}/jobs")
        page.select_option("#f-status", "cancelled")
        page.click("form.filters button[type=submit]")
        page.wait_for_selector("#jobs-list")
        assert "status=cancelled" in page.url
        assert "No jobs cancelled." in page.locator("#jobs-list").inner_text()
        page.goto(f"{stack.base_url}/uploads")
        assert page.locator("tr.upload-row").count() == 50
        page.click("#next-page")
        page.wait_for_selector("#uploads-list")
        assert page.locator("tr.upload-row").count() == 2 and page.locator("#next-page").count() == 0
        assert watched.problems() == []
    assert state(clean_db, run_id) == ("first line\nsecond line", False)
    assert state(clean_db, other) == (None, False)
