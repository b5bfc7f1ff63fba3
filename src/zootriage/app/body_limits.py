"""Request bodies bounded before anything parses them: a pure ASGI middleware with per-route limits.

FastAPI reads a JSON body whole before validating it, and a form parser keeps every field it has seen,
so without a bound a client decides how much memory one request costs. Here a declared
``Content-Length`` over the route's limit is refused (413) before a byte is read, and a chunked or
lying body is cut the moment it passes the limit: the app then sees a disconnect, and the client a 413.
Multipart bodies (uploads) are also bounded in their number of parts, counted on the raw stream by
their boundary, so a flood of tiny form fields is refused before the form parser allocates them. The
boundary is the one the parsers use (``app.multipart``); a Content-Type that could be read two ways is
refused (400) before the body is read.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from zootriage.app import multipart
from zootriage.app.api.errors import error_response
from zootriage.app.settings import Settings

UPLOAD_ROUTES = ("/v1/checkpoints", "/ui/checkpoints")
UPLOAD_OVERHEAD = 64 * 1024  # multipart headers and the other small fields around the file
MAX_PARTS = 16  # an upload is one file and a few fields


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class _PartCounter:
    """Counts ``--boundary`` delimiters across chunks (keeping a tail so a split delimiter counts once)."""

    def __init__(self, boundary: bytes) -> None:
        self.delimiter = b"--" + boundary
        self.tail = b""
        self.parts = 0

    def feed(self, chunk: bytes) -> int:
        data = self.tail + chunk
        self.parts += data.count(self.delimiter)
        self.tail = data[-(len(self.delimiter) - 1) :]  # too short to hold a whole (counted) delimiter
        return self.parts


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.json_limit = settings.body_limit_bytes
        self.upload_limit = settings.upload_limit_bytes + UPLOAD_OVERHEAD

    def limit_for(self, path: str) -> int:
        return self.upload_limit if path.rstrip("/") in UPLOAD_ROUTES else self.json_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        headers = dict(scope["headers"])
        try:
            declared = _declared_length(headers.get(b"content-length"), limit)
            boundary = _boundary(scope["headers"])
        except _Refused as refused:
            await error_response(refused.status, refused.code, refused.message)(scope, receive, send)
            return
        counter = None if boundary is None else _PartCounter(boundary)
        received = 0
        refusal: _Refused | None = None
        started = False

        async def bounded_receive() -> Message:
            nonlocal received, refusal
            if refusal is not None:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] != "http.request":
                return message
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > limit or (declared is not None and received > declared):
                refusal = _too_large(limit)
            elif counter is not None and counter.feed(chunk) > MAX_PARTS + 1:  # n parts: n + 1 delimiters
                refusal = _Refused(413, "too_many_parts", f"a form may have at most {MAX_PARTS} parts")
            if refusal is None:
                return message
            if not started:
                await error_response(refusal.status, refusal.code, refusal.message)(scope, receive, send)
            return {"type": "http.disconnect"}

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refusal is not None:
                return  # the 413 is the answer; whatever the app makes of the disconnect is dropped
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, guarded_send)
        except Exception:  # ClientDisconnect, or whatever the app made of the cut body
            if refusal is None:
                raise


def _too_large(limit: int) -> _Refused:
    return _Refused(413, "payload_too_large", f"the request body is over this endpoint's {limit}-byte limit")


def _boundary(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    try:
        return multipart.boundary(multipart.content_type(headers))
    except multipart.AmbiguousBoundary as exc:
        raise _Refused(400, "bad_request", str(exc)) from None


def _declared_length(value: bytes | None, limit: int) -> int | None:
    if value is None:
        return None
    if not value.isdigit() or len(value) > 20:
        raise _Refused(400, "bad_request", "Content-Length must be a non-negative integer")
    declared = int(value)
    if declared > limit:
        raise _too_large(limit)
    return declared
