"""From what a client sends to what core scores, shared by the API (to check an upload id before
queueing) and the worker (to score exactly that).

A job names an uploaded checkpoint by id (its sha256), never by a server path, so a client cannot make
the worker read arbitrary files: ``find_upload`` is the only way from an id to a file. Dataset paths
are confined to the configured data roots by core.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from zootriage.core.data.refs import AnyDatasetRef, Sampling, validate_dataset_ref
from zootriage.core.errors import ZooError
from zootriage.core.markers import Protocol
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


def stored_path(upload_dir: Path, sha256: str, suffix: str) -> Path:
    return upload_dir / f"{sha256}{suffix}"


def find_upload(upload_dir: Path, name: str) -> Path | None:
    """The stored file of an upload named ``<sha256>`` or ``<sha256><suffix>``, or None.

    The name is checked against that pattern first, so it can never walk to another path.
    """
    sha256, dot, rest = name.partition(".")
    suffixes = list(CANONICAL_SUFFIX.values())
    if not SHA256.match(sha256) or (dot and "." + rest not in suffixes):
        return None
    for suffix in ["." + rest] if dot else suffixes:
        candidate = stored_path(upload_dir, sha256, suffix)
        if candidate.is_file():
            return candidate
    return None


def upload_file(ref: CheckpointRef, upload_dir: Path) -> Path:
    found = find_upload(upload_dir, ref.path)
    if found is None:
        raise UnknownCheckpoint(f"{ref.path!r} is not the id of an uploaded checkpoint (see /v1/checkpoints)")
    return found


def local_model(ref: AnyModelRef, upload_dir: Path) -> AnyModelRef:
    """The same reference with an upload id replaced by the stored file's path."""
    if not isinstance(ref, CheckpointRef):
        return ref
    return ref.model_copy(update={"path": str(upload_file(ref, upload_dir))})


def parse_request(request: dict[str, Any]) -> tuple[AnyModelRef, AnyDatasetRef, Sampling, Protocol]:
    """The stored job request (JSON) back into core's types."""
    return (
        validate_model_ref(request["model"]),
        validate_dataset_ref(request["dataset"]),
        Sampling.model_validate(request["sampling"]),
        Protocol.from_dict(request["protocol"]),
    )
