"""Seeded class-balanced sampling, and the fingerprint of exactly what was sampled.

The fingerprint is the sha256 of a canonical JSON of the source's identity, the sampling request, the
chosen classes and the sampled indices (plus, for plain folders whose content no version pins, the
sha256 of each sampled file). Two runs with one fingerprint saw the same images with the same labels,
which is what the run key and the feature cache need.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from core.data.images import ImageSet
from core.data.refs import Sampling
from core.errors import BadSampling


@dataclass(frozen=True)
class Sample:
    indices: np.ndarray  # into the ImageSet, class-major, ascending within a class
    classes: tuple[int, ...]
    fingerprint: str


def sample(images: ImageSet, sampling: Sampling) -> Sample:
    """P classes (all, or a seeded choice) × M images each (seeded, without replacement)."""
    rng = np.random.default_rng(sampling.seed)
    present = np.unique(images.labels)
    if sampling.classes is not None:
        if sampling.classes > len(present):
            raise BadSampling(f"asked for {sampling.classes} classes, the dataset has {len(present)}")
        present = np.sort(rng.choice(present, size=sampling.classes, replace=False))
    chosen = []
    for label in present:
        members = np.flatnonzero(images.labels == label)
        if sampling.per_class is not None:
            if len(members) < sampling.per_class:
                raise BadSampling(
                    f"class {images.classes[label] if label < len(images.classes) else label} has "
                    f"{len(members)} images, fewer than the {sampling.per_class} asked per class"
                )
            members = np.sort(rng.choice(members, size=sampling.per_class, replace=False))
        chosen.append(members)
    indices = np.concatenate(chosen).astype(np.int64)
    classes = tuple(int(c) for c in present)
    return Sample(indices, classes, _fingerprint(images, sampling, classes, indices))


def _fingerprint(images: ImageSet, sampling: Sampling, classes: tuple[int, ...], indices: np.ndarray) -> str:
    digest = hashlib.sha256()
    header = {
        "identity": images.identity,
        "sampling": sampling.model_dump(mode="json"),
        "classes": classes,
        "label_space": images.label_space,
    }
    digest.update(json.dumps(header, sort_keys=True).encode())
    digest.update(indices.astype("<i8").tobytes())
    digest.update(images.labels[indices].astype("<i8").tobytes())
    if images.file_bytes is not None:
        for index in indices:
            digest.update(hashlib.sha256(images.file_bytes(int(index))).digest())
    return digest.hexdigest()
