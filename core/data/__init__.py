"""Dataset references -> seeded, class-balanced, fingerprinted samples of images."""

from core.data.archives import ArchiveLimits
from core.data.images import FittedImages, ImageSet
from core.data.open import open_dataset
from core.data.refs import (
    ArchiveRef,
    BuiltinRef,
    DatasetRef,
    FolderRef,
    Sampling,
    TorchvisionDatasetRef,
    parse_dataset_ref,
    validate_dataset_ref,
)
from core.data.sampling import Sample, sample

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
