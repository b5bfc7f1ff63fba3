"""From what a client sends to what core scores, shared by the API (to check an upload id before
queueing) and the worker (to score exactly that).

A job names an uploaded checkpoint by id (its sha256), never by a server path, so a client cannot make
the worker read arbitrary files: ``find_upload`` is the only way from an id to a stored object
(``uploads/<sha256><suffix>`` in the shared store, ``app.storage.shared_store``). Dataset paths
are confined to the configured data roots by core.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from zootriage.core.data.refs import AnyDatasetRef, Sampling, validate_dataset_ref
from zootriage.core.errors import ZooError
from zootriage.core.protocol import Protocol
from zootriage.core.storage import Store, content_key
from zootriage.core.zoo.refs import AnyModelRef, CheckpointRef, validate_model_ref

FORMATS = {
    ".safetensors": "safetensors",
    ".pt": "torch",
    ".pth": "torch",
    ".bin": "torch",
    ".pt2": "torch_export",
}
# Stored files use one suffix per format, so ``<sha256><suffix>`` names exactly one file.
CANONICAL_SUFFIX = {"safetensors": ".safetensors", "torch": ".pt", "torch_export": ".pt2"}
SHA256 = re.compile(r"^[0-9a-f]{64}$")



class UnknownCheckpoint(ZooError):
    """A checkpoint model whose ``path`` is not the id of an uploaded checkpoint."""

    code = "unknown_checkpoint"
    http_status = 404


def upload_key(sha256: str, suffix: str) -> str:
    """Where an accepted upload lives in the store: ``uploads/<sha256><suffix>``, checked by content."""
    return content_key("uploads", sha256, suffix)


def find_upload(store: Store, name: str) -> str | None:
    """The store key of an upload named ``<sha256>`` or ``<sha256><suffix>``, or None.

    The name is checked against that pattern first, so it can never name another key.
    """
    sha256, dot, rest = name.partition(".")
    suffixes = list(CANONICAL_SUFFIX.values())
    if not SHA256.match(sha256) or (dot and "." + rest not in suffixes):
        return None
    for suffix in ["." + rest] if dot else suffixes:
        key = upload_key(sha256, suffix)
        if store.exists(key):
            return key
    return None


def upload_of(ref: CheckpointRef, store: Store) -> str:
    """The store key of the upload a checkpoint reference names; ``UnknownCheckpoint`` if none."""
    found = find_upload(store, ref.path)
    if found is None:
        raise UnknownCheckpoint(f"{ref.path!r} is not the id of an uploaded checkpoint (see /v1/checkpoints)")
    return found


@contextmanager
def local_model(ref: AnyModelRef, store: Store, scratch: Path) -> Iterator[AnyModelRef]:
    """The same reference with an upload id replaced by a local file holding the upload's bytes for
    the duration of the block (a download into ``scratch`` from an object store, checked against its
    sha256 on the way; a local store's own file). Library references pass through unchanged."""
    if not isinstance(ref, CheckpointRef):
        yield ref
        return
    scratch.mkdir(parents=True, exist_ok=True)
    with store.open_local(upload_of(ref, store), scratch) as path:
        yield ref.model_copy(update={"path": str(path)})


def parse_request(request: dict[str, Any]) -> tuple[AnyModelRef, AnyDatasetRef, Sampling, Protocol]:
    """The stored job request (JSON) back into core's types."""
    return (
        validate_model_ref(request["model"]),
        validate_dataset_ref(request["dataset"]),
        Sampling.model_validate(request["sampling"]),
        Protocol.from_dict(request["protocol"]),
    )
