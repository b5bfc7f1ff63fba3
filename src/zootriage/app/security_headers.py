"""Response headers that keep browsers from misusing what the service sends.

Every response gets them (a pure ASGI middleware, so errors from the other middlewares do too):

- ``X-Content-Type-Options: nosniff``: a download or JSON answer is never sniffed into HTML or script.
- ``X-Frame-Options: DENY`` and CSP ``frame-ancestors 'none'``: no page can be framed (clickjacking).
- ``Referrer-Policy: no-referrer``: query strings (run ids, filters) never leak in a Referer.
- ``Content-Security-Policy``: scripts only from this origin's files (``script-src 'self'``: no inline
  script, no eval), so markup that slipped through escaping cannot run. Styles may be inline: the
  plots are matplotlib SVG inlined in the page, which carries its own ``<style>`` and ``style=``
  attributes, and htmx adds its indicator style; an injected style cannot run code. A route that
  needs more sets its own policy (``/docs`` and ``/redoc``, see ``app.ui.docs``), which is kept.
- ``Cache-Control: no-store`` on everything but static assets: pages and answers that needed a key
  are never kept by a browser or a shared cache for the next person.
"""

from __future__ import annotations

import base64
import hashlib
import re

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC_PREFIX = "/static/"
POLICY = {
    "default-src": "'none'",
    "script-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",
    "img-src": "'self' data:",
    "font-src": "'self'",
    "connect-src": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
    "base-uri": "'none'",
}
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def policy(**more: str) -> str:
    """The CSP header value: ``POLICY`` with the given directives (``script_src=...``) replaced."""
    directives = {**POLICY, **{name.replace("_", "-"): value for name, value in more.items()}}
    return "; ".join(f"{name} {value}" for name, value in directives.items())


def inline_script_hashes(html: str) -> str:
    """``'sha256-…'`` sources allowing exactly the inline ``<script>`` blocks of a page we generate."""
    digests = (hashlib.sha256(body.encode()).digest() for body in _INLINE_SCRIPT.findall(html))
    return " ".join(f"'sha256-{base64.b64encode(d).decode()}'" for d in digests)


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.policy = policy()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope["path"].startswith(STATIC_PREFIX)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["X-Content-Type-Options"] = "nosniff"
                headers["X-Frame-Options"] = "DENY"
                headers["Referrer-Policy"] = "no-referrer"
                if "content-security-policy" not in headers:
                    headers["Content-Security-Policy"] = self.policy
                if not static and "cache-control" not in headers:
                    headers["Cache-Control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)
