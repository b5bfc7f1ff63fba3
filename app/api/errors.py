"""Every failure leaves the API as ``{code, message}`` with a meaningful status, never a bare 500.

FastAPI's own 404/405/422 answers are rewritten here too, so a client parses one shape only.
Unreachable PostgreSQL or broker becomes 503 (retry later), not 500 (our bug).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from kombu.exceptions import OperationalError as BrokerError
from sqlalchemy.exc import DBAPIError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.schemas.errors import ErrorBody
from core.errors import ZooError

log = logging.getLogger(__name__)

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
}


class ApiError(Exception):
    """A client-visible failure with a stable machine-readable ``code``."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = ErrorBody(code=code, message=message).model_dump()
    return JSONResponse(status_code=status, content=body, headers=headers)


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entry documenting the error shape for the given statuses."""
    return {status: {"model": ErrorBody} for status in statuses}


def _describe_validation(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    @app.exception_handler(ZooError)
    async def _bad_input(_: Request, exc: ZooError) -> JSONResponse:
        return error_response(exc.http_status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "invalid_request", _describe_validation(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(OperationalError)
    async def _database_down(_: Request, exc: OperationalError) -> JSONResponse:
        log.warning("database unavailable: %s", exc)
        return error_response(503, "database_unavailable", "the database is unreachable; retry later")

    @app.exception_handler(DBAPIError)
    async def _database_error(_: Request, exc: DBAPIError) -> JSONResponse:
        if exc.connection_invalidated:
            return error_response(503, "database_unavailable", "the database connection was lost; retry")
        log.exception("database error", exc_info=exc)
        return error_response(500, "internal_error", "unexpected database error")

    @app.exception_handler(BrokerError)
    async def _broker_down(_: Request, exc: BrokerError) -> JSONResponse:
        log.warning("broker unavailable: %s", exc)
        return error_response(503, "broker_unavailable", "the job queue is unreachable; retry later")

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return error_response(500, "internal_error", "unexpected server error")
