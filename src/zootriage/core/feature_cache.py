"""The feature cache: a model's extraction on one sample, kept so a rescore needs no model.

An entry is one ``.npz`` (features, logits, labels, and the model's description as JSON bytes) under
``features/<key>.npz`` in a :class:`core.storage.Store`: a local folder for the embedded default and
the CLI, an S3-compatible store in a deployment, so any worker resumes a job from features another
worker extracted. The key (``core.scoring``) hashes everything the extraction depends on. Beside the
entries, ``samples/<key>.json``: what a child reported of a builtin set's sample
(:mod:`core.sample_records`).

Writes go to a temporary file in ``scratch`` and then to the store, which makes them whole or absent;
a damaged entry reads as a miss and is recomputed and overwritten.
"""

from __future__ import annotations

import errno
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zootriage.core.errors import InsufficientStorage
from zootriage.core.features import Extraction
from zootriage.core.storage import LocalStore, Store, feature_entry, sample_entry

_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True)
class FeatureCache:
    store: Store
    scratch: Path  # local folder for temporary files (for a local store: on the store's disk)

    @classmethod
    def folder(cls, path: str | Path) -> FeatureCache:
        """A cache in a local folder (entries in ``<path>/features/``)."""
        return cls(LocalStore(Path(path)), Path(path) / ".scratch")

    @staticmethod
    def key_of(key: str) -> str:
        return feature_entry(key)

    def read(self, key: str) -> tuple[Extraction, dict[str, Any]] | None:
        try:
            self.scratch.mkdir(parents=True, exist_ok=True)
            with (
                self.store.open_local(self.key_of(key), self.scratch) as path,
                np.load(path, allow_pickle=False) as data,
            ):
                described = json.loads(data["described"].tobytes())
                return Extraction(data["features"], data["logits"], data["labels"]), described
        except (OSError, ValueError, KeyError):
            return None  # absent, or damaged: recomputed and overwritten

    def write(self, key: str, extraction: Extraction, described: dict[str, Any]) -> None:
        """Store the entry; the model's description goes with the arrays so a hit needs no model.

        A failed write removes its temporary file (a full disk must not fill up further with partial
        entries); a disk or quota that is full becomes ``InsufficientStorage``, anything else propagates.
        """
        text = np.frombuffer(json.dumps(described).encode(), dtype=np.uint8)
        partial: Path | None = None
        try:
            with _full_disk_is_insufficient_storage():
                self.scratch.mkdir(parents=True, exist_ok=True)
                with tempfile.NamedTemporaryFile(dir=self.scratch, suffix=".tmp", delete=False) as handle:
                    partial = Path(handle.name)
                    np.savez(
                        handle, features=extraction.features, logits=extraction.logits,
                        labels=extraction.labels, described=text,
                    )
                self.store.put_file(self.key_of(key), partial, consume=True)
        finally:
            if partial is not None:
                partial.unlink(missing_ok=True)

    def read_sample(self, sample_key: str) -> dict[str, Any] | None:
        """The sample record under ``sample_key``; None when absent or not a JSON object."""
        try:
            self.scratch.mkdir(parents=True, exist_ok=True)
            with self.store.open_local(sample_entry(sample_key), self.scratch) as path:
                record = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def write_sample(self, sample_key: str, record: dict[str, Any]) -> None:
        """Store a sample record (whole or absent, as every object); a full disk as in :meth:`write`."""
        with _full_disk_is_insufficient_storage():
            data = json.dumps(record, sort_keys=True).encode()
            self.store.put_bytes(sample_entry(sample_key), data, self.scratch)


@contextmanager
def _full_disk_is_insufficient_storage() -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        if exc.errno in _DISK_FULL:
            raise InsufficientStorage("the service's feature cache is out of disk space") from exc
        raise
