"""Static checks of a dataset reference and a sampling request: what can be refused without opening.

The API runs these before queueing, so bad input is a 4xx at submit time and no dataset is opened,
listed or hashed in its process: a builtin set is checked against its class counts (static facts in
``core.data.builtin``), a folder by one ``stat``, a torchvision class against the supported list, an
archive by its headers (``core.data.archives.check_archive``, every read bounded). The worker runs
the full checks again when it opens the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from zootriage.core.data.archives import ArchiveLimits, check_archive
from zootriage.core.data.builtin import CLASS_COUNTS, builtin_split
from zootriage.core.data.folders import check_torchvision_name
from zootriage.core.data.refs import AnyDatasetRef, ArchiveRef, BuiltinRef, FolderRef, Sampling
from zootriage.core.data.roots import resolve_under_roots
from zootriage.core.data.sampling import choose_classes
from zootriage.core.errors import BadSampling, UnknownDataset


def check_dataset(
    ref: AnyDatasetRef, sampling: Sampling, roots: Sequence[Path], limits: ArchiveLimits
) -> int | None:
    """Refuse what the data cannot serve; return how many classes the sample will hold, when that is
    known without opening (builtin sets, or an explicit ``sampling.classes``)."""
    root_paths = list(roots)
    if isinstance(ref, BuiltinRef):
        counts = CLASS_COUNTS[(ref.name, builtin_split(ref.name, sampling.split))]
        present = np.array(sorted(counts), dtype=np.int64)
        sizes = np.array([counts[int(label)] for label in present], dtype=np.int64)
        picked = choose_classes(present, sizes, sampling, np.random.default_rng(sampling.seed))
        return len(picked)
    if isinstance(ref, ArchiveRef):
        if sampling.split is not None:
            raise BadSampling("an archive has no splits; leave split empty")
        check_archive(ref.path, root_paths, limits)
        return sampling.classes
    if isinstance(ref, FolderRef):
        where = f"{ref.path}/{sampling.split}" if sampling.split else ref.path
        folder, _ = resolve_under_roots(where, root_paths)
        if not folder.is_dir():
            raise UnknownDataset(f"{where!r} is not a folder")
        return sampling.classes
    check_torchvision_name(ref.name)
    folder, _ = resolve_under_roots(ref.path, root_paths)
    if not folder.is_dir():
        raise UnknownDataset(f"{ref.path!r} is not a folder")
    return sampling.classes
