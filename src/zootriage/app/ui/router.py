"""Everything the pages add to the app: their routes, their static files, and the login redirect."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from zootriage.app.ui import (
    forms,
    login,
    pages_artifacts,
    pages_backtests,
    pages_compare,
    pages_gates,
    pages_home,
    pages_jobs,
    pages_recommendations,
    pages_runs,
    pages_trends,
    pages_uploads,
)
from zootriage.app.ui.deps import PageRead
from zootriage.app.ui.docs import install_docs
from zootriage.app.ui.session import LoginNeeded

STATIC = Path(__file__).parent / "static"


def install_ui(app: FastAPI) -> None:
    install_docs(app)
    app.mount("/static/ui", StaticFiles(directory=STATIC), name="ui-static")

    app.include_router(login.router, include_in_schema=False)
    pages = (pages_home, pages_runs, pages_compare, pages_gates, pages_recommendations, pages_backtests)
    for module in (*pages, pages_trends, pages_artifacts, pages_jobs, pages_uploads, forms):
        app.include_router(module.router, dependencies=[PageRead], include_in_schema=False)

    @app.exception_handler(LoginNeeded)
    async def _to_login(request: Request, exc: LoginNeeded) -> Response:
        target = "/login?" + urlencode({"next": request.url.path, "reason": exc.message})
        if request.headers.get("HX-Request"):  # HTMX follows this header instead of swapping the login page
            return Response(status_code=204, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)
