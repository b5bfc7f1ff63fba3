"""Errors for bad model and dataset input, each with a stable machine-readable ``code``.

The API maps a :class:`ZooError` to an HTTP 4xx ``{code, message}``; the worker fails the job on one
(retrying cannot fix bad input) and retries anything else. ``code`` strings are part of the public
contract: never rename one. :class:`Cancelled` sits beside them: the way a caller's cancel check
stops a long computation (GLUE's repeats, the solver's batches) without core knowing who asked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

CancelCheck = Callable[[], bool]


class Cancelled(Exception):
    """The caller's cancel check answered yes: a long computation stops between two steps.

    Not a :class:`ZooError`: nothing is wrong with the input, the caller no longer wants the answer.
    """


def stop_if_cancelled(cancel: CancelCheck | None) -> None:
    """Raise :class:`Cancelled` when ``cancel`` (a cheap callable, polled between steps) says so."""
    if cancel is not None and cancel():
        raise Cancelled()


class ZooError(Exception):
    """Base class: the input (a model, a dataset or a sampling request) cannot be used as given."""

    code = "zoo_error"
    http_status = 422

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class BadReference(ZooError):
    """A model or dataset reference string or JSON that does not parse."""

    code = "bad_reference"

    @classmethod
    def from_validation(cls, kind: str, exc: ValidationError) -> BadReference:
        """One line per field pydantic rejected: ``invalid <kind> reference: loc: msg; ...``."""
        fields = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())
        return cls(f"invalid {kind} reference: {fields}")


class UnknownModel(ZooError):
    """An architecture, weights enum or timm name that the installed libraries do not know."""

    code = "unknown_model"
    http_status = 404


class WeightsNotAvailable(ZooError):
    """Known weights whose file is neither cached nor downloadable (offline machines)."""

    code = "weights_not_available"
    http_status = 404


class BadCheckpoint(ZooError):
    """A weights file that cannot be used; the subclasses say why."""

    code = "bad_checkpoint"


class NotACheckpoint(BadCheckpoint):
    code = "not_a_checkpoint"


class TruncatedCheckpoint(BadCheckpoint):
    code = "checkpoint_truncated"


class CheckpointNeedsCode(BadCheckpoint):
    """A pickle that would import code to load: refused, only tensors and plain containers load."""

    code = "checkpoint_needs_code"


class CheckpointUnsafe(BadCheckpoint):
    """A file holding something a loader could execute: a native library, an archive member outside the
    format's layout, a shape expression or graph target outside the allowed grammar."""

    code = "checkpoint_unsafe"


class CheckpointTooLarge(BadCheckpoint):
    """A file over a bound of the static check: members, name lengths or decompressed bytes (zip bombs)."""

    code = "checkpoint_too_large"


class CheckpointKeyMismatch(BadCheckpoint):
    """A state_dict whose keys or shapes do not fit the named architecture."""

    code = "checkpoint_key_mismatch"


class PenultimateNotFound(BadCheckpoint):
    """No final linear layer (or no node of the given name) to take penultimate features from."""

    code = "penultimate_not_found"


class ResourceLimit(ZooError):
    """The isolated process that loads a model ran out of a resource limit (memory, CPU, file size)
    or died; its model is too large or its file is hostile."""

    code = "resource_limit"


class TimeLimit(ZooError):
    """The isolated process that loads a model and extracts features ran past its wall-clock limit."""

    code = "time_limit"


class UnknownDataset(ZooError):
    code = "unknown_dataset"
    http_status = 404


class PathOutsideRoots(ZooError):
    """A dataset path that is absolute, climbs with ``..`` or resolves (through a symlink) outside
    every configured data root."""

    code = "path_outside_roots"
    http_status = 403


class BadImage(ZooError):
    """An image file that does not decode, or whose pixel count is over the limit."""

    code = "bad_image"


class BadArchive(ZooError):
    code = "bad_archive"


class ArchiveTooLarge(BadArchive):
    """An archive over a size, image-count or decompressed-bytes limit (zip bombs included)."""

    code = "archive_too_large"
    http_status = 413


class BadSampling(ZooError):
    """A sampling request the dataset cannot satisfy (too few classes or images per class)."""

    code = "bad_sampling"


class InsufficientStorage(ZooError):
    """The service's own disk (the feature cache) is full. Not the input's fault, but retrying soon
    cannot help either: the job fails with this code and an operator frees space."""

    code = "insufficient_storage"
    http_status = 507
