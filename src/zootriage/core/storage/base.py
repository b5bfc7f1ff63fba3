"""One storage interface for uploads, the feature cache and study artefacts.

A *key* is a relative, slash-separated name such as ``uploads/<sha256>.pt2`` or
``features/<cache key>.npz``. Objects are immutable once written: a writer puts a whole file under its
key or nothing (readers never see a partial object), and rewriting a key with the same content is a
no-op. Content-addressed keys (:func:`content_key`) are checked on the way in and on the way out: an
object whose bytes no longer hash to its name is refused, never handed to a loader.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHUNK = 1 << 20
_KEY = re.compile(r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_.-]+)+$")
_CONTENT = re.compile(r"^[0-9a-f]{64}$")
CONTENT_ADDRESSED = frozenset({"uploads"})


class StorageError(Exception):
    """Base of the storage errors; ``code`` is the error's stable name."""

    code = "storage_error"


class NotFound(StorageError, FileNotFoundError):
    code = "not_found"


class Corrupt(StorageError):
    """The stored bytes do not hash to the object's content address."""

    code = "corrupt_object"


def check_key(key: str) -> str:
    """A key is ``namespace/name`` with no ``..``, no leading slash and a small alphabet."""
    if not _KEY.match(key) or any(part in {".", ".."} for part in key.split("/")) or len(key) > 512:
        raise ValueError(f"bad storage key {key!r}")
    return key


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def content_key(namespace: str, sha256: str, suffix: str = "") -> str:
    """``namespace/<sha256><suffix>``: the key of an object named by its content."""
    if namespace not in CONTENT_ADDRESSED:
        raise ValueError(f"namespace {namespace!r} is not content-addressed")
    if not _CONTENT.match(sha256):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    return check_key(f"{namespace}/{sha256}{suffix}")


def feature_entry(cache_key: str) -> str:
    """The key of a feature-cache entry (``core.feature_cache``): ``features/<cache key>.npz``."""
    return check_key(f"features/{cache_key}.npz")


def sample_entry(sample_key: str) -> str:
    """The key of a sample record (``core.sample_records``): ``samples/<sample key>.json``."""
    return check_key(f"samples/{sample_key}.json")


def addressed_sha256(key: str) -> str | None:
    """The sha256 a content-addressed key names (its file name's stem), else None. Only the
    namespaces in ``CONTENT_ADDRESSED`` are named by content (a feature-cache key is a hash of the
    extraction's inputs, not of the entry's bytes)."""
    namespace, _, name = key.partition("/")
    stem = name.split(".", 1)[0]
    return stem if namespace in CONTENT_ADDRESSED and _CONTENT.match(stem) else None


def verify(key: str, path: Path) -> None:
    """Raise :class:`Corrupt` when ``path`` does not hash to the sha256 that ``key`` names."""
    expected = addressed_sha256(key)
    if expected is not None and file_sha256(path) != expected:
        raise Corrupt(f"stored object {key} does not match its sha256")


class Store(ABC):
    """Where objects live. Subclasses: :class:`core.storage.local.LocalStore` and
    :class:`app.storage.s3.S3Store`."""

    @abstractmethod
    def put_file(self, key: str, path: Path, *, consume: bool = False) -> None:
        """Store the file at ``path`` under ``key`` atomically (checked first if content-addressed).
        ``consume``: the caller gives the file away, so a local store may move it instead of copying."""

    @abstractmethod
    def get_file(self, key: str, dest: Path) -> Path:
        """Copy the object to ``dest`` (atomically: ``dest`` is whole or absent); :class:`NotFound`
        when there is none, :class:`Corrupt` when its bytes do not match its content address."""

    @contextmanager
    def open_local(self, key: str, scratch: Path | None = None) -> Iterator[Path]:
        """A local file with the object's bytes for the duration of the block (a download into
        ``scratch``, removed afterwards; a local store yields its own file without copying)."""
        with tempfile.TemporaryDirectory(dir=scratch, prefix=".get-") as folder:
            yield self.get_file(key, Path(folder) / key.rsplit("/", 1)[-1])

    @abstractmethod
    def exists(self, key: str) -> bool: ...

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the object; removing an absent one is not an error."""

    @abstractmethod
    def keys(self, namespace: str) -> list[str]:
        """Every key under ``namespace/`` (for maintenance and tests; unordered)."""

    def put_bytes(self, key: str, data: bytes, scratch: Path) -> None:
        """Store ``data`` under ``key`` (through a temporary file in ``scratch``)."""
        scratch.mkdir(parents=True, exist_ok=True)
        tmp = scratch / f".put-{hashlib.sha256(data).hexdigest()[:16]}-{id(data)}"
        try:
            tmp.write_bytes(data)
            self.put_file(key, tmp)
        finally:
            tmp.unlink(missing_ok=True)
