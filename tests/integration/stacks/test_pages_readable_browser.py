"""The same readable pages in headless Chromium against the real API (uvicorn, no worker: the queued
job stays queued): a torchvision model submitted through the score form, a finished job's wall time
and queue wait on ``/``, and a run's and a gate's references field by field, with no console error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.integration.browser import chromium, watched_page
from tests.integration.seeding import fake_run
from tests.integration.stack import Stack
from tests.integration.test_pages_readable import (
    NESTED_MODEL,
    TORCHVISION_FORM,
    WEIGHTS,
    cached_weights,
    finished_job,
    stored_gate,
)
from zootriage.app.db.models import Job, RunTag
from zootriage.app.db.session import session_scope

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture(scope="module")
def api_only(api_only_stack: Stack) -> Stack:
    """The session's API-only uvicorn, with ResNet18's V1 weights in its torch hub cache (a placeholder
    it never reads)."""
    cached_weights(Path(api_only_stack.env["TORCH_HOME"]))
    return api_only_stack


def test_pages_read_as_fields_and_the_form_queues_a_torchvision_model(
    api_only: Stack, clean_db: str, tmp_path: Path
) -> None:
    finished = finished_job(0.0, 5.0, 53.2, 17.2)
    with session_scope(clean_db) as session:
        run = fake_run(3)
        run.model_ref = NESTED_MODEL
        run.tags = [RunTag(key="team", value="vision")]
        session.add_all([run, finished])
        session.flush()
        run_id, job_prefix = run.id, str(finished.id)[:8]
    gate_id = stored_gate(clean_db)
    with chromium() as browser:
        watched = watched_page(browser)
        page = watched.page
        page.goto(f"{api_only.base_url}/")
        row = page.locator(f"#jobs tr.job:has-text('{job_prefix}')")
        assert row.locator("td.wall").inner_text() == "48.2"
        assert row.locator("td.queued").inner_text() == "5.0"
        page.select_option("#model_source", "torchvision")
        page.fill("#model_name", TORCHVISION_FORM["model_name"])
        page.fill("#weights", TORCHVISION_FORM["weights"])
        page.fill("#dataset", TORCHVISION_FORM["dataset"])
        page.click("#submit-form button[type=submit]")
        notice = page.wait_for_selector("#submit-form .notice")
        assert notice is not None
        job_id = re.search(r"queued job ([0-9a-f-]{36})", notice.inner_text())
        assert job_id, notice.inner_text()
        page.screenshot(path=tmp_path / "home.png", full_page=True)

        page.goto(f"{api_only.base_url}/runs/{run_id}")
        assert page.locator("#run-tags code.tag").all_inner_texts() == ["team=vision"]
        model = page.locator("#run-model")
        names = model.locator("dt").all_inner_texts()
        assert names[0] == "source" and {"path", "label_space", "preprocess.crop"} <= set(names)
        assert "{" not in model.inner_text() and "{" not in page.locator("#run-dataset").inner_text()
        page.screenshot(path=tmp_path / "run.png", full_page=True)

        page.goto(f"{api_only.base_url}/gates/{gate_id}")
        candidate = page.locator("#gate-candidate")
        assert "model.preprocess.mean" in candidate.locator("dt").all_inner_texts()
        assert "{" not in page.locator("main dl.card").inner_text()
        page.screenshot(path=tmp_path / "gate.png", full_page=True)
        assert watched.problems() == []
    with session_scope(clean_db) as session:
        job = session.scalar(select(Job).where(Job.id == job_id.group(1)))
        assert job is not None and job.request["model"] == {
            "source": "torchvision", "arch": "resnet18", "weights": WEIGHTS.name
        }
