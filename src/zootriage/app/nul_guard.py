"""Requests whose path or query string holds a NUL character are refused (422) before any route runs.

PostgreSQL text cannot hold NUL (0x00), so a NUL in any query parameter or path segment that reaches a
query would end as a database error (500) instead of a client error; the schema fuzz found one in
``GET /v1/trends?arch=…%00``. No name, tag, id or date of this service contains NUL, so one check for
every route replaces a validator on each text parameter. A pure ASGI middleware: nothing is parsed
before the check.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Receive, Scope, Send

from zootriage.app.api.errors import error_response


def holds_nul(raw: bytes) -> bool:
    """Whether ``raw`` (a path or query string as sent) holds NUL, literally or percent-encoded."""
    return b"\x00" in raw or b"\x00" in unquote_to_bytes(raw)


class NulGuardMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw_path = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
            if holds_nul(raw_path) or holds_nul(scope.get("query_string", b"")):
                message = "the request's path or query string contains a NUL character"
                await error_response(422, "invalid_request", message)(scope, receive, send)
                return
        await self.app(scope, receive, send)
