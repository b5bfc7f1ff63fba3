"""Requests that carry text PostgreSQL cannot store are refused (422) before any route runs.

PostgreSQL text and JSON cannot hold NUL (0x00), nor an unpaired UTF-16 surrogate (``"\\ud800"`` in
JSON), so such a character in a query parameter, a path segment or a string of a JSON body that
reaches the database ended as a database error (500) instead of a client error: the schema fuzz found
one in ``GET /v1/trends?arch=…%00``, an audit one in each text field of a job's model and dataset
references and of a project. No name, tag, id, path or description of this service holds either, so
one check for every route replaces a validator on each text field:

- the path and the query string, as sent and percent-decoded;
- a JSON body (``application/json``, ``…+json``): every string in it, keys included, once parsed;
- a form body (``application/x-www-form-urlencoded``), as sent and percent-decoded.

Multipart bodies (uploads) carry binary files: their text fields are checked where they are parsed
(``app.services.checkpoints``). A pure ASGI middleware, inside the body limits (``app.body_limits``),
so the body it reads whole is already bounded; it hands the route the same bytes. A body that is not
valid JSON is passed on untouched, for the route's own parser to refuse.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from zootriage.app.api.errors import error_response


def holds_nul(raw: bytes) -> bool:
    """Whether ``raw`` (a path or query string as sent) holds NUL, literally or percent-encoded."""
    return b"\x00" in raw or b"\x00" in unquote_to_bytes(raw)


def unstorable(text: str) -> bool:
    """Whether ``text`` holds a character PostgreSQL cannot store: NUL or an unpaired surrogate."""
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def first_unstorable(document: Any) -> str | None:
    """The JSON path (``$.model.label_space``) of the first unstorable string in a parsed document
    (keys too), or ``None``; walked without recursion, so no depth the parser accepted can overflow."""
    todo: list[tuple[str, Any]] = [("$", document)]
    while todo:
        where, value = todo.pop()
        if isinstance(value, str) and unstorable(value):
            return where
        if isinstance(value, dict):
            for key, item in value.items():
                if unstorable(key):
                    return where
                todo.append((f"{where}.{key}", item))
        elif isinstance(value, list):
            todo += [(f"{where}[{index}]", item) for index, item in enumerate(value)]
    return None


def _body_kind(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"content-type":
            media = value.split(b";")[0].strip().lower()
            if media == b"application/json" or media.endswith(b"+json"):
                return "json"
            if media == b"application/x-www-form-urlencoded":
                return "form"
    return None


def _fault(kind: str, body: bytes) -> str | None:
    if kind == "form":
        return "the request's form holds a NUL character" if holds_nul(body) else None
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None  # not JSON: the route's parser answers for it
    where = first_unstorable(document)
    if where is None:
        return None
    return f"the request's body holds a NUL character or an unpaired surrogate in a string, at {where}"


class NulGuardMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw_path = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
        if holds_nul(raw_path) or holds_nul(scope.get("query_string", b"")):
            refusal = "the request's path or query string contains a NUL character"
            await error_response(422, "invalid_request", refusal)(scope, receive, send)
            return
        kind = _body_kind(scope)
        if kind is None:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # a disconnect (or a body cut at its limit)
                await self.app(scope, _replay(message, receive), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        fault = _fault(kind, body)
        if fault is not None:
            await error_response(422, "invalid_request", fault)(scope, receive, send)
            return
        whole: Message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, _replay(whole, receive), send)


def _replay(first: Message, receive: Receive) -> Receive:
    """A ``receive`` that gives ``first`` (the body read whole, or the disconnect that cut it), then
    the real one's messages."""
    given = False

    async def replayed() -> Message:
        nonlocal given
        if not given:
            given = True
            return first
        return await receive()

    return replayed
