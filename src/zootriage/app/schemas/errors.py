"""The one error shape every endpoint returns."""

from __future__ import annotations

from pydantic import BaseModel


class ErrorBody(BaseModel):
    code: str
    message: str
    # The same id as the X-Request-ID response header; the server log holds the details under it.
    request_id: str
