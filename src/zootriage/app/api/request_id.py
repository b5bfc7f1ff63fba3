"""A request id on every response, so a client's report of an error finds its details in the log.

The id is the client's ``X-Request-ID`` when it is a short token (a proxy's id stays one id end to
end), else a fresh one. It lives in a context variable: each ASGI request runs in its own task, whose
context is a copy, so the value is visible to every handler of that request (the 500 handler included,
which Starlette runs outside the middleware stack) and to nothing else.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "X-Request-ID"
_ACCEPTED = re.compile(r"[A-Za-z0-9._-]{1,64}")
_current: ContextVar[str | None] = ContextVar("zootriage_request_id", default=None)


def current_request_id() -> str:
    """This request's id; outside a request (a script calling the app's helpers) a fresh one."""
    return _current.get() or uuid.uuid4().hex


def _inbound(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            text = value.decode("latin-1")
            return text if _ACCEPTED.fullmatch(text) else None
    return None


class RequestIdMiddleware:
    """Pure ASGI: sets the id for the request and adds it to the response headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _inbound(scope) or uuid.uuid4().hex
        _current.set(request_id)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if HEADER not in headers:
                    headers.append(HEADER, request_id)
            await send(message)

        await self.app(scope, receive, send_with_id)
