"""Storage behind one interface (``Store``): a local folder by default, S3 for a deployment.

``open_store(url, default_root)``: ``None`` or ``file:///path`` → :class:`LocalStore`;
``s3://bucket/prefix`` → :class:`S3Store` (endpoint from ``?endpoint=http://host:port`` or the
standard ``AWS_ENDPOINT_URL``; credentials from the standard AWS variables).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

from app.storage.base import Corrupt, NotFound, StorageError, Store, content_key
from app.storage.local import LocalStore

__all__ = ["Corrupt", "LocalStore", "NotFound", "StorageError", "Store", "content_key", "open_store"]


def open_store(url: str | None, default_root: Path) -> Store:
    """The store a storage URL names; ``ValueError`` for a URL of another kind."""
    if not url:
        return LocalStore(default_root)
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return LocalStore(Path(parsed.path))
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ValueError(f"storage URL {url!r} names no bucket")
        from app.storage.s3 import S3Store

        query = parse_qs(parsed.query)
        return S3Store(
            parsed.netloc,
            prefix=parsed.path,
            endpoint_url=query.get("endpoint", [None])[0],
            region=query.get("region", [None])[0],
        )
    raise ValueError(f"storage URL {url!r}: the scheme must be file:// or s3://")
