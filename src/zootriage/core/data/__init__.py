"""Dataset references -> seeded, class-balanced, fingerprinted samples of images.

Importing the package is light: the references and the sampling request (``refs``) need only pydantic,
so the command-line client parses a dataset reference without numpy or torch. Opening and sampling a
dataset (``open_dataset``, ``sample``, ...) imports numpy, torch and torchvision on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zootriage.core.data.refs import (
    ArchiveRef,
    BuiltinRef,
    DatasetRef,
    FolderRef,
    Sampling,
    TorchvisionDatasetRef,
    parse_dataset_ref,
    validate_dataset_ref,
)
from zootriage.core.lazy import lazy_names

if TYPE_CHECKING:
    from zootriage.core.data.archives import ArchiveLimits
    from zootriage.core.data.fitting import FittedImages
    from zootriage.core.data.images import ImageSet
    from zootriage.core.data.open import open_dataset
    from zootriage.core.data.sampling import Sample, sample

_HEAVY = {
    "ArchiveLimits": ".archives",
    "FittedImages": ".fitting",
    "ImageSet": ".images",
    "open_dataset": ".open",
    "Sample": ".sampling",
    "sample": ".sampling",
}


__getattr__ = lazy_names(__name__, _HEAVY, globals())


__all__ = [
    "ArchiveLimits",
    "ArchiveRef",
    "BuiltinRef",
    "DatasetRef",
    "FittedImages",
    "FolderRef",
    "ImageSet",
    "Sample",
    "Sampling",
    "TorchvisionDatasetRef",
    "open_dataset",
    "parse_dataset_ref",
    "sample",
    "validate_dataset_ref",
]
