"""The web pages in headless Chromium against the real stack (uvicorn + Celery on PostgreSQL/Redis),
with real scored jobs of the ccexam MNIST program (one for the module's history, copied twice in the
database, and one submitted through the page to watch live).

Every page must load with no console error and no request leaving the machine. Screenshots of each
page are kept under the pytest tmp dir as artefacts.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser
from sqlalchemy import delete, select
from sqlalchemy.orm import selectinload

from tests.integration.browser import Watched, chromium, watched_page
from tests.integration.databases import wipe_tables
from tests.integration.seeding import fake_run
from tests.integration.stack import Stack
from zootriage.app.db.models import Job, Marker, Run
from zootriage.app.db.session import session_scope

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.slow]  # Chromium against the stack

TERMINAL = {"succeeded", "failed", "cancelled"}


def _finish(http: httpx.Client, posted: httpx.Response, timeout: float = 300) -> str:
    """The run id of a submitted job, once the worker has stored it."""
    if posted.status_code == 200:
        return str(posted.json()["id"])
    assert posted.status_code == 202, posted.text
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = http.get(posted.headers["Location"]).json()
        if job["status"] in TERMINAL:
            assert job["status"] == "succeeded", job
            return str(job["run_id"])
        time.sleep(0.2)
    raise AssertionError(f"job {posted.headers['Location']} did not finish")


@pytest.fixture(scope="module")
def scored(stack: Stack, digit_programs: dict[str, Path], database_url: str) -> list[str]:
    """Three runs from an empty history: one real run of the ccexam MNIST CNN (advertorch's LeNet5
    programs are over the session's 2 MB upload limit), then two copies of it on other sampling seeds
    with shifted marker values, written into the database (these tests are about pages, not jobs: a
    real job costs a worker extraction each; the upload test below runs one live)."""
    wipe_tables(database_url)
    http = httpx.Client(base_url=stack.base_url, timeout=60)
    program = digit_programs["ccexam"].read_bytes()
    uploaded = http.post("/v1/checkpoints", files={"file": ("ccexam.pt2", program)})
    assert uploaded.status_code in {200, 201}, uploaded.text
    model = {"source": "checkpoint", "path": uploaded.json()["model_path"]}
    body: dict[str, Any] = {
        "model": model,
        "dataset": {"source": "builtin", "name": "mnist"},
        "sampling": {"per_class": 20, "split": "test", "seed": 0},
        "protocol": {"n_t": 50, "seed": 0},
    }
    real = _finish(http, http.post("/v1/jobs", json=body))
    return [real, *(_copy_run(database_url, real, seed) for seed in (1, 2))]


def _copy_run(database_url: str, run_id: str, seed: int) -> str:
    """A run like ``run_id`` on sampling seed ``seed``: a run key of its own, a later time, and every
    marker value scaled by ``1 - 0.02 * seed`` (distinct points, still inside each marker's range)."""
    with session_scope(database_url) as session:
        source = session.scalars(
            select(Run).where(Run.id == uuid.UUID(run_id)).options(selectinload(Run.markers))
        ).one()
        scale = 1 - 0.02 * seed
        copy = Run(
            run_key=hashlib.sha256(f"{source.run_key}-seed-{seed}".encode()).hexdigest(),
            model_ref=source.model_ref, name=source.name, architecture=source.architecture,
            weights_sha256=source.weights_sha256, dataset_ref=source.dataset_ref,
            dataset_fingerprint=source.dataset_fingerprint, sampling={**source.sampling, "seed": seed},
            protocol=source.protocol, model_meta=source.model_meta,
            code_version=source.code_version, device=source.device, n_images=source.n_images,
            timings=source.timings, created_at=source.created_at + timedelta(seconds=seed),
            markers=[
                Marker(
                    name=m.name, value=None if m.value is None else m.value * scale, std=m.std,
                    applicable=m.applicable, reason=m.reason, decidable=m.decidable, version=m.version,
                )
                for m in source.markers
            ],
        )  # fmt: skip
        session.add(copy)
        session.flush()
        return str(copy.id)


@pytest.fixture(scope="module")
def gate_id(stack: Stack, scored: list[str]) -> str:
    """A gate decided from stored runs alone (the first run against itself: the same sample)."""
    same = {"source": "run", "id": scored[0]}
    body = {
        "candidate": same,
        "baseline": same,
        "dataset": {"source": "builtin", "name": "mnist"},
        "sampling": {"per_class": 20, "split": "test", "seed": 0},
        "protocol": {"n_t": 50, "seed": 0},
        "rules": ["dimension: max_relative_drop 0.05", "id_accuracy: min 0.9"],
    }
    decided = httpx.post(f"{stack.base_url}/v1/gates", json=body, timeout=60)
    assert decided.status_code in {200, 201}, decided.text
    return str(decided.json()["id"])


@pytest.fixture
def history_kept(database_url: str, scored: list[str]) -> Iterator[None]:
    """For a test that scores more: its new runs and jobs go afterwards, so that the module's other
    tests (in any order) see the ``scored`` history alone."""
    with session_scope(database_url) as session:
        jobs_before = set(session.scalars(select(Job.id)))
    yield
    keep = [uuid.UUID(run_id) for run_id in scored]
    with session_scope(database_url) as session:
        session.execute(delete(Run).where(Run.id.not_in(keep)))
        session.execute(delete(Job).where(Job.id.not_in(jobs_before)))


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium for the module (each launch is seconds of CPU); every test gets a fresh context of
    its own (``watched_page``: no cookie, cache or page shared), closed after it."""
    with chromium() as launched:
        yield launched


@pytest.fixture
def browser_page(stack: Stack, browser: Browser) -> Iterator[Watched]:
    watched = watched_page(browser)
    try:
        yield watched
    finally:
        watched.page.context.close()
    assert watched.problems() == []


def _visit(watched: Watched, url: str, shots: Path, name: str) -> None:
    response = watched.page.goto(url)
    assert response is not None and response.status == 200, (url, response and response.status)
    watched.page.wait_for_load_state("networkidle")
    watched.page.screenshot(path=shots / f"{name}.png", full_page=True)


def test_every_page_loads_offline_without_errors(
    stack: Stack, scored: list[str], gate_id: str, browser_page: Watched, shots: Path
) -> None:
    base, page = stack.base_url, browser_page.page
    _visit(browser_page, f"{base}/", shots, "home")
    assert page.locator("#jobs").count() == 1
    _visit(browser_page, f"{base}/runs", shots, "runs")
    assert page.locator(".run-row").count() == len(scored)
    _visit(browser_page, f"{base}/runs/{scored[0]}", shots, "run")
    assert page.locator("#markers-table tbody tr").count() >= 20
    assert page.get_by_text("Weights sha256").count() == 1
    _visit(browser_page, f"{base}/gates", shots, "gates")
    assert page.locator(f"a[href='/gates/{gate_id}']").count() == 1
    _visit(browser_page, f"{base}/gates/{gate_id}", shots, "gate")
    assert page.locator("#rules-table tbody tr").count() == 2
    _visit(browser_page, f"{base}/recommendations?dataset=builtin:mnist", shots, "recommendations")
    assert page.locator("tr.pair").count() == 24
    page.click("a[href^='/recommendations/mobilenet_v2?']")
    page.wait_for_load_state("networkidle")
    assert page.locator("#state-text").get_attribute("data-state") == "not-scored"  # and nothing queued
    page.screenshot(path=shots / "recommendation.png", full_page=True)
    _visit(browser_page, f"{base}/backtests/study", shots, "study")
    assert page.locator("tr.rule").count() > 0
    _visit(browser_page, f"{base}/login", shots, "login")
    _visit(browser_page, f"{base}/docs", shots, "docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)  # rendered from the local bundle
    _visit(browser_page, f"{base}/redoc", shots, "redoc")
    page.wait_for_selector("redoc-wrapper, .redoc-wrap, [role=navigation]", timeout=30_000)


def test_pages_fit_a_phone_screen(stack: Stack, scored: list[str], shots: Path, browser: Browser) -> None:
    """Wide tables scroll inside their own box; the page itself never scrolls sideways."""
    phone = watched_page(browser, width=390, height=844)
    try:
        pages = (
            ("home", "/"),
            ("runs", "/runs"),
            ("run", f"/runs/{scored[0]}"),
            ("backtests", "/backtests"),
            ("study", "/backtests/study"),
            ("recommendation", "/recommendations/mobilenet_v2?dataset=builtin:mnist"),
        )
        for name, path in pages:
            phone.page.goto(stack.base_url + path)
            phone.page.screenshot(path=shots / f"phone-{name}.png", full_page=True)
            overflow = phone.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, (path, overflow)
        assert phone.problems() == []
    finally:
        phone.page.context.close()


def test_the_history_filters_and_pages(stack: Stack, scored: list[str], browser_page: Watched) -> None:
    page = browser_page.page
    page.goto(f"{stack.base_url}/runs?limit=2&sort=id_accuracy&order=desc")
    first = page.locator(".run-row").count()
    page.click("#next-page")
    page.wait_for_load_state()
    assert (first, page.locator(".run-row").count()) == (2, 1)
    # A marker range that excludes every run, set through the form.
    page.goto(f"{stack.base_url}/runs")
    page.select_option("#f-marker", "id_accuracy")
    page.fill("#f-min", "2")
    page.click("button:has-text('Apply')")
    page.wait_for_load_state()
    assert page.get_by_text("No runs match.").count() == 1
    # The column chooser adds a marker column.
    page.goto(f"{stack.base_url}/runs?cols=logme&cols=capacity")
    headers = page.locator("#runs-table thead th").all_inner_texts()
    assert headers[-2:] == ["logme", "capacity"]
    # A bad bound is a message on the page, not a traceback.
    response = page.goto(f"{stack.base_url}/runs?marker=capacity&min=abc")
    assert response is not None and response.status == 422
    assert "is not a number" in page.locator(".error").inner_text()
    assert "422" in browser_page.console_errors.pop()  # Chromium logs the page's own status: expected


def test_the_scatter_has_one_point_per_run(
    stack: Stack, scored: list[str], browser_page: Watched, shots: Path
) -> None:
    page = browser_page.page
    page.goto(f"{stack.base_url}/compare?runs={','.join(scored)}")
    page.wait_for_selector("#scatter svg", timeout=30_000)
    assert page.locator("#scatter").get_attribute("data-points") == str(len(scored))
    points = page.locator("#scatter svg #points a")  # one linked marker per run, drawn by the server
    assert points.count() == len(scored)
    assert {points.nth(i).get_attribute("xlink:href") for i in range(len(scored))} == {
        f"/runs/{run}" for run in scored
    }
    assert page.locator("#compare-table thead th").count() == 1 + len(scored)
    page.screenshot(path=shots / "compare.png", full_page=True)


def test_upload_and_submit_forms_make_a_job_that_progresses_live(
    stack: Stack,
    scored: list[str],
    history_kept: None,
    digit_programs: dict[str, Path],
    browser_page: Watched,
    shots: Path,
) -> None:
    page = browser_page.page
    page.goto(f"{stack.base_url}/")
    page.evaluate("window.notReloaded = true")
    page.set_input_files("#file", str(digit_programs["ccexam"]))
    page.click("#upload-form button[type=submit]")
    path = page.wait_for_selector("#uploaded-path").inner_text()
    page.fill("#checkpoint", path)
    page.fill("#per_class", "40")  # a sample not scored yet: a new job, not the stored run
    page.fill("#n_t", "50")
    page.fill("#seed", "3")
    seen: list[str] = []

    def watch(until: tuple[str, ...]) -> None:
        """Record each new text of the job's row until it contains one of ``until``."""
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            state = row.first.inner_text() if row.count() else ""
            if state and (not seen or seen[-1] != state):
                seen.append(state)
            if any(word in state for word in until):
                return
            time.sleep(0.1)

    # The job waits mid-extraction until the page has shown it running: with a warm child ready, a job
    # this small can finish between two looks at the page.
    with stack.paused():
        page.click("#submit-form button[type=submit]")
        queued = page.wait_for_selector("#submit-form .notice").inner_text()
        job_id = re.search(r"queued job ([0-9a-f-]{36})", queued)
        assert job_id, queued
        row = page.locator(f"#jobs tr.job:has-text('{job_id.group(1)[:8]}')")
        watch(until=("running", "failed"))
    watch(until=("succeeded", "failed"))
    page.screenshot(path=shots / "home-after-job.png", full_page=True)
    assert "running" in seen[-2] and "succeeded" in seen[-1], seen  # the row changed in place
    assert page.evaluate("window.notReloaded") is True


def test_a_failed_form_shows_its_error_next_to_the_field(stack: Stack, browser_page: Watched) -> None:
    page = browser_page.page
    page.goto(f"{stack.base_url}/")
    page.fill("#per_class", "many")
    page.click("#submit-form button[type=submit]")
    assert "per_class" in page.wait_for_selector("#per_class-error:not(:empty)").inner_text()
    page.set_input_files("#file", files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"x"}])
    page.click("#upload-form button[type=submit]")
    assert page.wait_for_selector("#file-error:not(:empty)").inner_text().startswith("unsupported")


@pytest.fixture
def backtest_runs(stack: Stack, database_url: str) -> Iterator[list[str]]:
    """Four runs of two architectures scored alike (a back-test needs one protocol and one dataset, and
    the only upload small enough here is one model), written into the stack's database and removed after."""
    runs = [fake_run(100 + i, architecture="resnet18" if i % 2 else "vgg11") for i in range(4)]
    with session_scope(database_url) as session:
        session.add_all(runs)
        session.flush()
        ids = [str(run.id) for run in runs]
    yield ids
    with session_scope(database_url) as session:
        session.execute(Run.__table__.delete().where(Run.id.in_([uuid.UUID(i) for i in ids])))


def test_the_backtest_scatter_has_one_point_per_run_and_a_bad_form_its_error(
    stack: Stack, backtest_runs: list[str], browser_page: Watched, shots: Path
) -> None:
    page = browser_page.page
    page.goto(f"{stack.base_url}/backtests")
    lines = [f"{run},{0.6 + 0.1 * i}" for i, run in enumerate(backtest_runs)]
    page.fill("#outcomes", "\n".join(["run_id,outcome", *lines]))
    page.fill("#n_boot", "200")
    page.click("#backtest-form button[type=submit]")
    page.wait_for_selector("#scatter svg", timeout=30_000)
    assert page.locator("#scatter").get_attribute("data-points") == str(len(backtest_runs))
    points = page.locator("#scatter svg #points a")
    assert {points.nth(i).get_attribute("xlink:href") for i in range(points.count())} == {
        f"/runs/{run}" for run in backtest_runs
    }
    assert "dimension: accuracy" in (page.locator("#scatter").get_attribute("aria-label") or "")
    assert "confirmatory" in page.locator("#backtest-method").inner_text()
    assert page.locator("#confirmatory-table tr.rule").count() >= 2
    page.screenshot(path=shots / "backtests.png", full_page=True)
    page.fill("#outcomes", "nonsense,0.5")
    page.click("#backtest-form button[type=submit]")
    page.wait_for_load_state()
    assert "is not a run id" in page.locator("#outcomes-error").inner_text()
    assert "422" in browser_page.console_errors.pop()  # Chromium logs the page's own status: expected
