"""Uploaded checkpoints: accepted after the static check only (``core.zoo.archive_check``).

The API process never opens an upload with a torch loader and never builds a model: whether a
state_dict fits its architecture, or a program runs, is learnt when a job loads it in the worker's
isolated child (``core.isolation``). Files are kept as ``<sha256><suffix>`` in the upload folder
(see ``app.references``).
"""

from __future__ import annotations

from pathlib import Path

from app.api.errors import ApiError
from app.references import FORMATS
from app.services.uploads import ReceivedFile
from core.zoo.archive_check import check_file

LIBRARIES = ("torchvision", "timm")


def suffix_of(filename: str | None) -> str:
    suffix = Path(filename or "").suffix.lower()
    if suffix not in FORMATS:
        raise ApiError(422, "unsupported_format", f"checkpoint file names end in one of {sorted(FORMATS)}")
    return suffix


def check_fields(library: str | None, architecture: str | None, suffix: str) -> None:
    if (library is None) != (architecture is None):
        raise ApiError(422, "invalid_upload", "'library' and 'architecture' go together")
    if library is not None and library not in LIBRARIES:
        raise ApiError(422, "invalid_upload", f"'library' is one of {LIBRARIES}")
    if library is not None and suffix == ".pt2":
        raise ApiError(422, "invalid_upload", "a .pt2 program carries its own architecture")
    if library is not None and architecture is not None and not _known(library, architecture):
        raise ApiError(422, "unknown_model", f"{library} has no architecture {architecture!r}")


def _known(library: str, architecture: str) -> bool:
    """Whether the library lists the name (its registry only: nothing is built)."""
    if library == "torchvision":
        import torchvision

        return architecture in torchvision.models.list_models(module=torchvision.models)
    import timm

    return bool(timm.is_model(architecture.partition(".")[0]))


def validate(received: ReceivedFile, suffix: str) -> None:
    """The static allow-list check; refusals carry core's code and name the user's file only."""
    check_file(received.path, Path(received.filename or "").name or f"upload{suffix}")
