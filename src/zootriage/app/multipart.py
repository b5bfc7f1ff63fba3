"""The boundary of a multipart body, read one way for everything that reads it.

The part counter (``app.body_limits``) and the parsers (``app.services.uploads`` and Starlette's form
parser) must cut the body at the very same delimiter: if the counter picked one ``boundary=`` of a
header carrying two and the parser the other, the counter would count a delimiter that never occurs
while the parser split a million parts. So the boundary is taken here, by python-multipart's own
``parse_options_header`` (the function both parsers call), and a header that could be read two ways
(two Content-Type headers, two ``boundary`` parameters, or one spelled so that the parser does not see
it, such as ``Boundary=`` or the RFC 2231 ``boundary*=`` that RFC 7578 forbids) is refused.
"""

from __future__ import annotations

from python_multipart.multipart import parse_options_header

BOUNDARY_MAX = 200  # RFC 2046 allows 70 characters


class AmbiguousBoundary(ValueError):
    """A Content-Type whose multipart boundary is not one well-defined value."""


def content_type(headers: list[tuple[bytes, bytes]]) -> bytes:
    """The one Content-Type of raw ASGI headers (b"" when there is none); two are ambiguous, since
    Starlette reads the first and a ``dict`` of the headers the last."""
    values = [value for name, value in headers if name.lower() == b"content-type"]
    if len(values) > 1:
        raise AmbiguousBoundary("send one Content-Type header")
    return values[0] if values else b""


def boundary(header: bytes | str | None) -> bytes | None:
    """The boundary the multipart parsers will use for this Content-Type value, or None if it has none."""
    if not header:
        return None
    text = header.decode("latin-1") if isinstance(header, bytes) else header
    named = [part.partition("=")[0].strip().lower() for part in text.split(";")[1:]]
    declared = sum(name.startswith("boundary") for name in named)
    found = parse_options_header(text)[1].get(b"boundary")
    if declared > 1:
        raise AmbiguousBoundary("the Content-Type has more than one boundary parameter")
    if declared == 1 and not found:
        raise AmbiguousBoundary("write the boundary parameter as boundary=VALUE")
    if found is not None and not 0 < len(found) <= BOUNDARY_MAX:
        raise AmbiguousBoundary(f"a multipart boundary has 1 to {BOUNDARY_MAX} characters")
    return found
