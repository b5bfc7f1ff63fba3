"""Storage behind one interface (``Store``): a local folder by default, S3 for a deployment.

``open_store(url, default_root)``: ``None`` or ``file:///path`` → :class:`LocalStore`;
``s3://bucket/prefix`` → :class:`S3Store` (endpoint from ``?endpoint=http://host:port`` or the
standard ``AWS_ENDPOINT_URL``; credentials from the standard AWS variables).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import ParseResult, parse_qs, urlparse

from zootriage.app.settings import Settings
from zootriage.core.storage import LocalStore, Store, feature_entry

if TYPE_CHECKING:  # the API checks the store without importing torch (which the cache's arrays need)
    from zootriage.core.feature_cache import FeatureCache

__all__ = [
    "check_storage_url",
    "feature_cache",
    "feature_store",
    "features_stored",
    "open_store",
    "upload_store",
]


def check_storage_url(url: str) -> ParseResult:
    """The parsed URL of a store: ``file://PATH`` or ``s3://BUCKET[/PREFIX][?endpoint=…]``;
    ``ValueError`` for any other (the settings check it at start-up, before any job)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("file", "s3"):
        raise ValueError(f"storage URL {url!r}: the scheme must be file:// or s3://")
    if parsed.scheme == "s3" and not parsed.netloc:
        raise ValueError(f"storage URL {url!r} names no bucket")
    return parsed


def open_store(url: str | None, default_root: Path) -> Store:
    """The store a storage URL names; ``ValueError`` for a URL of another kind."""
    if not url:
        return LocalStore(default_root)
    parsed = check_storage_url(url)
    if parsed.scheme == "file":
        return LocalStore(Path(parsed.path))
    return _s3_store(url)


@lru_cache(maxsize=8)
def _s3_store(url: str) -> Store:
    """One client per URL and process (boto3 clients are thread-safe; making one costs ~0.1 s)."""
    from zootriage.app.storage.s3 import S3Store

    parsed = urlparse(url)
    query = parse_qs(parsed.query)
    return S3Store(
        parsed.netloc,
        prefix=parsed.path,
        endpoint_url=query.get("endpoint", [None])[0],
        region=query.get("region", [None])[0],
    )


def upload_store(settings: Settings) -> Store:
    """Where accepted uploads live (``uploads/<sha256><suffix>``): the object store of
    ``storage_url``, else the local store under the state dir (``<state_dir>/uploads/``), which the
    API and an embedded worker share. ``upload_dir`` is only each host's scratch space."""
    return open_store(settings.storage_url, settings.state_dir.resolve())


def feature_store(settings: Settings) -> Store:
    """Where the feature cache's entries live: the object store of ``storage_url``, else the local
    ``cache_dir``."""
    return open_store(settings.storage_url, settings.effective_cache_dir)


def features_stored(settings: Settings, cache_key: str) -> bool:
    """Whether the feature cache holds an entry (a HEAD request, no download, no torch)."""
    return feature_store(settings).exists(feature_entry(cache_key))


def feature_cache(settings: Settings) -> FeatureCache:
    """The workers' feature cache: the local ``cache_dir``, or the object store of ``storage_url``
    (with ``cache_dir`` for temporary downloads)."""
    from zootriage.core.feature_cache import FeatureCache

    if not settings.storage_url:
        return FeatureCache.folder(settings.effective_cache_dir)
    return FeatureCache(feature_store(settings), settings.effective_cache_dir / ".scratch")
