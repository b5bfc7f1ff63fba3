"""/docs and /redoc with their assets served from the ``fastapi-offline`` package, not a CDN."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

from zootriage.app.security_headers import inline_script_hashes, policy

ASSETS = Path(fastapi_offline.__file__).parent / "static"
PREFIX = "/static/docs"
# ReDoc's footer shows Redocly's logo from their CDN: offline that request fails (a console error).
REDOC_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


@cache
def offline_redoc() -> bytes:
    """The package's ReDoc bundle with its one CDN image pointed at our own favicon."""
    bundle = (ASSETS / "redoc.standalone.js").read_bytes()
    return bundle.replace(REDOC_CDN_LOGO, f"{PREFIX}/favicon.png".encode())


def install_docs(app: FastAPI) -> None:
    """Call with ``FastAPI(docs_url=None, redoc_url=None)``: these routes replace the CDN-backed ones."""
    @app.get(f"{PREFIX}/redoc-offline.js", include_in_schema=False)
    def redoc_js() -> Response:
        headers = {"Cache-Control": "public, max-age=86400"}
        return Response(offline_redoc(), media_type="text/javascript", headers=headers)

    app.mount(PREFIX, StaticFiles(directory=ASSETS), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} – API",
            swagger_js_url=f"{PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{PREFIX}/favicon.png",
        )
        # The page starts Swagger UI from one inline script of FastAPI's: allowed by its hash, alone.
        scripts = inline_script_hashes(bytes(page.body).decode())
        page.headers["Content-Security-Policy"] = policy(script_src=f"'self' {scripts}")
        return page

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        page = get_redoc_html(
            openapi_url=openapi_url,
            title=f"{app.title} – API",
            redoc_js_url=f"{PREFIX}/redoc-offline.js",
            redoc_favicon_url=f"{PREFIX}/favicon.png",
            with_google_fonts=False,
        )
        page.headers["Content-Security-Policy"] = policy(worker_src="'self' blob:")  # ReDoc's search worker
        return page
