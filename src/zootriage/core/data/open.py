"""From a dataset reference to an :class:`~core.data.images.ImageSet` (nothing decoded yet)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from zootriage.core.data.archives import ArchiveLimits, open_archive
from zootriage.core.data.builtin import open_builtin
from zootriage.core.data.folders import open_folder, open_torchvision
from zootriage.core.data.images import ImageSet
from zootriage.core.data.refs import AnyDatasetRef, ArchiveRef, BuiltinRef, FolderRef
from zootriage.core.errors import BadSampling


def open_dataset(
    ref: AnyDatasetRef,
    split: str | None = None,
    *,
    roots: Sequence[Path | str] = (),
    limits: ArchiveLimits | None = None,
) -> ImageSet:
    """``roots`` are the folders that folder, torchvision and archive references may read under."""
    limits = limits or ArchiveLimits()
    root_paths = [Path(r) for r in roots]
    if isinstance(ref, BuiltinRef):
        return open_builtin(ref.name, split)
    if isinstance(ref, FolderRef):
        return open_folder(ref.path, split, root_paths, ref.label_space, limits)
    if isinstance(ref, ArchiveRef):
        if split is not None:
            raise BadSampling("an archive has no splits; leave split empty")
        return open_archive(ref.path, root_paths, ref.label_space, limits)
    return open_torchvision(ref.name, ref.path, split, root_paths, ref.label_space)
