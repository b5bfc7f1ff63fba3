"""Every answer carries the browser-hardening headers; pages and API answers are never cached."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping

from fastapi.testclient import TestClient

HARDENING = {"x-content-type-options": "nosniff", "x-frame-options": "DENY", "referrer-policy": "no-referrer"}


def _csp(headers: Mapping[str, str]) -> dict[str, str]:
    text = headers["content-security-policy"]
    return dict(part.strip().split(" ", 1) for part in text.split(";"))


def test_pages_api_answers_and_errors_carry_the_headers(client: TestClient) -> None:
    json_type = {"Content-Type": "application/json"}
    too_big = client.post("/v1/jobs", content=b"x" * (2 * 1024 * 1024), headers=json_type)
    answers = {
        "page": client.get("/runs"), "login": client.get("/login"), "api": client.get("/v1/runs"),
        "csv": client.get("/v1/runs?format=csv"), "not_found": client.get("/v1/runs/nope"),
        "too_big": too_big,
    }
    for what, answer in answers.items():
        assert {k: answer.headers.get(k) for k in HARDENING} == HARDENING, what
        assert answer.headers["cache-control"] == "no-store", what
        csp = _csp(answer.headers)
        assert csp["script-src"] == "'self'" and csp["frame-ancestors"] == "'none'", what
        assert csp["default-src"] == "'none'" and "'unsafe-eval'" not in csp["script-src"]
    assert answers["too_big"].status_code == 413


def test_static_assets_may_be_cached(client: TestClient) -> None:
    style = client.get("/static/ui/style.css")
    assert style.status_code == 200 and "no-store" not in style.headers.get("cache-control", "")
    assert style.headers["x-content-type-options"] == "nosniff"


def test_pages_have_no_inline_script(client: TestClient) -> None:
    for path in ("/", "/runs", "/login", "/gates", "/backtests", "/compare"):
        page = client.get(path).text
        scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.DOTALL)
        assert scripts and all('src="/' in attrs and not body.strip() for attrs, body in scripts), path
        assert not re.search(r"\son[a-z]+=", page), path  # no inline event handlers either


def test_the_api_docs_allow_exactly_their_own_inline_script(client: TestClient) -> None:
    docs = client.get("/docs")
    (inline,) = re.findall(r"<script>(.*?)</script>", docs.text, re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    assert _csp(docs.headers)["script-src"] == f"'self' 'sha256-{digest}'"
    assert docs.headers["x-frame-options"] == "DENY" and docs.headers["cache-control"] == "no-store"
