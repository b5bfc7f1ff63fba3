"""The pages follow the API's access policy: a read key where reads need one, kept in an HttpOnly,
SameSite=Strict cookie set by the login form; writes need that policy and a CSRF token besides."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from tests.integration.access import PUBLIC, app_client, stored_key
from zootriage.app.api_keys import Scope
from zootriage.app.db.models import Job
from zootriage.app.db.session import session_scope
from zootriage.app.settings import Settings

JOB_FORM = {
    "model_source": "checkpoint", "checkpoint": "f" * 64 + ".pt2", "dataset": "mnist", "per_class": "x"
}


def _csrf(client: TestClient) -> str:
    client.get("/login")
    token = client.cookies.get("zt_csrf")
    assert token
    return token


def _log_in(client: TestClient, key: str, next_path: str = "/runs") -> None:
    answer = client.post(
        "/login", data={"key": key, "next": next_path, "csrf": _csrf(client)}, follow_redirects=False
    )
    assert (answer.status_code, answer.headers["location"]) == (303, next_path)
    cookie = answer.headers["set-cookie"]
    assert "zt_session=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie, cookie


def _alerts(page: str) -> list[str]:
    return [html.unescape(a) for a in re.findall(r'role="alert">([^<]*)<', page) if a.strip()]


def test_off_loopback_pages_need_a_read_key_given_through_the_login_form(
    settings: Settings, clean_db: str
) -> None:
    key = stored_key(clean_db, Scope.read)
    with app_client(settings, **PUBLIC) as client:
        pages = (
            "/", "/runs", "/runs.csv", "/compare?runs=x", "/ui/jobs", "/backtests", "/backtests/study",
            "/recommendations/mobilenet_v2",
        )
        for path in pages:
            refused = client.get(path, follow_redirects=False)
            assert refused.status_code == 303 and refused.headers["location"].startswith("/login?"), path
        posted = client.post("/backtests", data={"outcomes": "x"}, follow_redirects=False)
        assert posted.status_code == 303 and posted.headers["location"].startswith("/login?")
        wrong = client.post("/login", data={"key": "nope", "csrf": _csrf(client)})
        assert wrong.status_code == 401 and "unauthorized" in _alerts(wrong.text)[0]
        _log_in(client, key)
        assert key not in str(client.get("/runs").url)
        assert client.get("/runs").status_code == 200
        assert client.get("/runs.csv").text.startswith("id,created_at")
        for path in ("/backtests", "/backtests/study", "/recommendations/mobilenet_v2"):
            assert client.get(path).status_code == 200, path
        # The cookie is for pages only: the API still wants the header.
        assert client.get("/v1/runs").status_code == 401


def test_a_login_goes_back_only_to_a_path_on_this_site(settings: Settings, clean_db: str) -> None:
    key = stored_key(clean_db, Scope.read)
    with app_client(settings, **PUBLIC) as client:
        form = {"key": key, "next": "//evil.example/", "csrf": _csrf(client)}
        answer = client.post("/login", data=form, follow_redirects=False)
        assert answer.headers["location"] == "/"


def _jobs(database_url: str) -> int:
    with session_scope(database_url) as session:
        return int(session.scalar(select(func.count()).select_from(Job)) or 0)


def test_page_writes_need_the_csrf_token_and_the_write_scope(settings: Settings, clean_db: str) -> None:
    reader, writer = stored_key(clean_db, Scope.read, name="r"), stored_key(clean_db, Scope.write, name="w")
    with app_client(settings, **PUBLIC) as client:
        _log_in(client, writer)
        forged = client.post("/ui/jobs", data=JOB_FORM)
        assert _alerts(forged.text) == [
            "csrf_failed: the form's CSRF token is missing or stale; reload the page"
        ]
        token = client.cookies.get("zt_csrf")
        assert token
        wrong_token = client.post("/ui/jobs", data=JOB_FORM, headers={"X-CSRF-Token": token[::-1]})
        assert _alerts(wrong_token.text)[0].startswith("csrf_failed")
        checked = client.post("/ui/jobs", data=JOB_FORM, headers={"X-CSRF-Token": token})
        assert any("per_class" in alert for alert in _alerts(checked.text)), checked.text
        _log_in(client, reader)
        valid = {**JOB_FORM, "per_class": "5"}
        refused = client.post("/ui/jobs", data=valid, headers={"X-CSRF-Token": token})
        assert _alerts(refused.text) == ["forbidden: the API key 'r' lacks the write scope"]
    assert _jobs(clean_db) == 0


def test_api_docs_are_served_from_local_assets(settings: Settings, clean_db: str) -> None:
    with app_client(settings) as client:
        for page in ("/docs", "/redoc"):
            sources = re.findall(r'(?:src|href)="([^"]+)"', client.get(page).text)
            assert sources and all(s.startswith("/") for s in sources), (page, sources)
            for source in sources:
                assert client.get(source).status_code == 200, source
        assert b"cdn.redoc.ly" not in client.get("/static/docs/redoc-offline.js").content
