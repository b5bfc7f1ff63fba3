"""Streaming multipart upload: hashed and written to disk as it arrives, cut off at the size limit.

FastAPI's ``UploadFile`` would first spool the whole body (any size) before our code ran; parsing the
request stream ourselves lets an oversize upload be refused after ``limit`` bytes, not after all of it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from python_multipart.multipart import MultipartParser, parse_options_header

from zootriage.app import multipart
from zootriage.app.services.errors import ServiceError

MAX_FIELD_BYTES = 4096


@dataclass
class ReceivedFile:
    path: Path
    sha256: str
    size: int
    filename: str | None
    fields: dict[str, str] = field(default_factory=dict)


def write_all(fd: int, chunk: bytes) -> None:
    """Write every byte (``os.write`` may write fewer); a full disk is the server's state, not the
    client's fault: 507, and the caller removes the partial file."""
    view = memoryview(chunk)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ServiceError(
                507, "insufficient_storage", "the server has no space left for uploads"
            ) from exc
        raise


class _Receiver:
    """Callbacks for the multipart parser: the ``file`` part goes to disk, small text parts to memory."""

    def __init__(self, folder: Path, limit: int) -> None:
        self.limit = limit
        self.fd, name = tempfile.mkstemp(dir=folder, prefix=".upload-")
        self.path = Path(name)
        self.digest = hashlib.sha256()
        self.size = 0
        self.filename: str | None = None
        self.seen_file = False
        self.ended = False  # the closing boundary was read: the body is whole, not cut short
        self.fields: dict[str, str] = {}
        self._header_name = b""
        self._headers: dict[bytes, bytes] = {}
        self._part_name: str | None = None
        self._part_is_file = False
        self._value = bytearray()

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._headers[self._header_name.lower()] = (
            self._headers.get(self._header_name.lower(), b"") + data[start:end]
        )

    def on_header_end(self) -> None:
        self._header_name = b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        self._part_name = options.get(b"name", b"").decode("utf-8", "replace")
        filename = options.get(b"filename")
        self._part_is_file = self._part_name == "file"
        if self._part_is_file:
            if self.seen_file:
                raise ServiceError(422, "invalid_upload", "send exactly one 'file' part")
            self.seen_file = True
            self.filename = filename.decode("utf-8", "replace") if filename else None

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._part_is_file:
            self.size += len(chunk)
            if self.size > self.limit:
                raise ServiceError(413, "payload_too_large", f"checkpoints are limited to {self.limit} bytes")
            self.digest.update(chunk)
            write_all(self.fd, chunk)
        else:
            self._value += chunk
            if len(self._value) > MAX_FIELD_BYTES:
                raise ServiceError(422, "invalid_upload", f"form field {self._part_name!r} is too long")

    def on_part_end(self) -> None:
        if not self._part_is_file and self._part_name:
            self.fields[self._part_name] = self._value.decode("utf-8", "replace")
        self._headers, self._value, self._part_name, self._part_is_file = {}, bytearray(), None, False

    def on_end(self) -> None:
        self.ended = True

    def callbacks(self) -> dict[str, object]:
        names = (
            "header_field", "header_value", "header_end", "headers_finished", "part_data", "part_end", "end"
        )
        return {f"on_{n}": getattr(self, f"on_{n}") for n in names}


async def receive_file(
    content_type: str | None, chunks: AsyncIterator[bytes], folder: Path, limit: int
) -> ReceivedFile:
    """Parse a ``multipart/form-data`` stream whose ``file`` part is the upload; other parts are fields.
    The boundary is ``app.multipart``'s, the one the part counter (``app.body_limits``) counted."""
    mime, _ = parse_options_header(content_type or "")
    try:
        boundary = multipart.boundary(content_type)
    except multipart.AmbiguousBoundary as exc:
        raise ServiceError(400, "bad_request", str(exc)) from None
    if mime != b"multipart/form-data" or not boundary:
        raise ServiceError(415, "unsupported_media_type", "send multipart/form-data with a 'file' part")
    folder.mkdir(parents=True, exist_ok=True)
    receiver = _Receiver(folder, limit)
    try:
        parser = MultipartParser(boundary, receiver.callbacks())  # type: ignore[arg-type]
        async for chunk in chunks:
            parser.write(chunk)
        parser.finalize()
    except ServiceError:
        receiver.path.unlink(missing_ok=True)
        raise
    except Exception as exc:  # the parser's own errors: malformed multipart
        receiver.path.unlink(missing_ok=True)
        raise ServiceError(422, "invalid_upload", f"malformed multipart body: {exc}") from exc
    finally:
        os.close(receiver.fd)
    if not receiver.ended:  # a file cut short would be stored as if whole
        receiver.path.unlink(missing_ok=True)
        raise ServiceError(422, "invalid_upload", "the multipart body ends before its closing boundary")
    if not receiver.seen_file or receiver.size == 0:
        receiver.path.unlink(missing_ok=True)
        raise ServiceError(422, "invalid_upload", "the 'file' part is missing or empty")
    return ReceivedFile(
        receiver.path, receiver.digest.hexdigest(), receiver.size, receiver.filename, receiver.fields
    )
