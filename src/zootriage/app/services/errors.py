"""The services' own refusals: a stable machine-readable ``code``, a message, and the status it means.

Services know nothing of HTTP: they raise :class:`ServiceError` (as core raises ``core.errors.ZooError``)
and the one exception handler at the edge (``app.api.errors.install_error_handlers``, installed by
``app.main.create_app``) turns it into ``{code, message, request_id}`` with ``status``. The web pages
catch the same type and show ``code: message`` beside the form. ``code`` strings are part of the
public contract: never rename one.
"""

from __future__ import annotations


class ServiceError(Exception):
    """A request the service refuses. ``status`` is the HTTP status the edge answers with (4xx for the
    caller's mistake, 409 for a state conflict, 503/507 for the service's own state); ``headers`` are
    extra response headers (``Retry-After``)."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
