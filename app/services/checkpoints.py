"""Uploaded checkpoints: accepted only once core can load them the way a job will.

Files are kept as ``<sha256><suffix>`` in the upload folder (see ``app.references``).
"""

from __future__ import annotations

from pathlib import Path

from app.api.errors import ApiError
from app.references import FORMATS
from app.services.uploads import ReceivedFile
from core.errors import ZooError
from core.zoo.loader import load_model
from core.zoo.refs import CheckpointRef
from core.zoo.weights import read_state_dict

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


def validate(received: ReceivedFile, suffix: str, library: str | None, architecture: str | None) -> None:
    """Load the file as the worker will: a program or a state_dict built into its architecture when one
    is named, else just its tensors. Refusals carry core's code (``checkpoint_key_mismatch``, ...)."""
    staged = received.path.with_name(received.path.name + suffix)
    received.path.rename(staged)
    received.path = staged
    try:
        if suffix == ".pt2" or library is not None:
            ref = CheckpointRef(path=str(staged), library=library, architecture=architecture)  # type: ignore[arg-type]
            load_model(ref)
        else:
            read_state_dict(staged)
    except ZooError:
        raise
    except Exception as exc:
        raise ApiError(422, "bad_checkpoint", f"the file cannot be loaded as a checkpoint: {exc}") from exc
