"""Every failure leaves the API as ``{code, message, request_id}`` with a meaningful status.

FastAPI's own 404/405/422 answers are rewritten here too, so a client parses one shape only.
Unreachable PostgreSQL or broker, and a saturated connection pool, become 503 with ``Retry-After``
(retry later), not 500 (our bug). A 500 says nothing about its cause: the exception and traceback go
to the server log under the request id, which the client gets in the body and the X-Request-ID header.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from kombu.exceptions import OperationalError as BrokerError
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from zootriage.app.api.request_id import HEADER as REQUEST_ID_HEADER
from zootriage.app.api.request_id import current_request_id
from zootriage.app.schemas.errors import ErrorBody
from zootriage.app.services.errors import ServiceError
from zootriage.core.errors import ZooError

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
# Seconds a client is asked to wait before retrying a 503: long enough for a burst to drain.
RETRY_AFTER_S = 1


class ApiError(ServiceError):
    """A refusal of the HTTP layer itself (access, cursors, capacity); services raise their own
    :class:`app.services.errors.ServiceError`, and one handler below answers both."""


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """The error body and headers; every 503 says when to retry."""
    request_id = current_request_id()
    body = ErrorBody(code=code, message=message, request_id=request_id).model_dump()
    extra = {REQUEST_ID_HEADER: request_id, **(headers or {})}
    if status == 503:
        extra.setdefault("Retry-After", str(RETRY_AFTER_S))
    return JSONResponse(status_code=status, content=body, headers=extra)


def _where(request: Request) -> str:
    return f"{request.method} {request.url.path} request_id={current_request_id()}"


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
    @app.exception_handler(ServiceError)
    async def _refused(_: Request, exc: ServiceError) -> JSONResponse:
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
    async def _database_down(request: Request, exc: OperationalError) -> JSONResponse:
        log.warning("database unavailable in %s: %s", _where(request), exc)
        return error_response(503, "database_unavailable", "the database is unreachable; retry later")

    @app.exception_handler(PoolTimeout)
    async def _pool_exhausted(request: Request, exc: PoolTimeout) -> JSONResponse:
        log.warning("no database connection free in %s: %s", _where(request), exc)
        return error_response(503, "overloaded", "the service is at capacity; retry later")

    @app.exception_handler(DBAPIError)
    async def _database_error(request: Request, exc: DBAPIError) -> JSONResponse:
        if exc.connection_invalidated:
            log.warning("database connection lost in %s: %s", _where(request), exc)
            return error_response(503, "database_unavailable", "the database connection was lost; retry")
        log.error("database error in %s", _where(request), exc_info=exc)
        return error_response(500, "internal_error", "unexpected server error; quote the request id")

    @app.exception_handler(BrokerError)
    async def _broker_down(request: Request, exc: BrokerError) -> JSONResponse:
        log.warning("broker unavailable in %s: %s", _where(request), exc)
        return error_response(503, "broker_unavailable", "the job queue is unreachable; retry later")

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error in %s", _where(request), exc_info=exc)
        return error_response(500, "internal_error", "unexpected server error; quote the request id")
