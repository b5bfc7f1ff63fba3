"""Headless Chromium (Debian's) under Playwright, fenced to this machine: any request to another host
fails the test, and every console error or page exception is collected for the test to assert on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from playwright.sync_api import Browser, Page, Route, sync_playwright

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
LOCAL_HOSTS = {"127.0.0.1"}


@dataclass
class Watched:
    """A page and what went wrong in it: console errors, uncaught exceptions, requests off the machine."""

    page: Page
    console_errors: list[str] = field(default_factory=list)
    offsite: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        return [*self.console_errors, *(f"request left the machine: {u}" for u in self.offsite)]


@contextmanager
def chromium() -> Iterator[Browser]:
    """Playwright gives each launch a fresh, empty user-data dir of its own (it refuses the flag)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def watched_page(browser: Browser, width: int = 1280, height: int = 900) -> Watched:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    watched = Watched(page)

    def fence(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).scheme in {"data", "blob"} or urlsplit(url).hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            watched.offsite.append(url)
            route.abort()

    context.route("**/*", fence)
    page.on("console", lambda msg: watched.console_errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: watched.console_errors.append(f"page error: {exc}"))
    return watched
