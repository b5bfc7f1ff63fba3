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

from zootriage.core.data.images import ImageSet
from zootriage.core.data.refs import PER_CLASS_MIN, Sampling
from zootriage.core.errors import BadSampling

# Bump when a change here draws other images for the same request, or fingerprints them otherwise: the
# feature cache's sample records (core.sample_records) are keyed by it.
SAMPLING_VERSION = 1


@dataclass(frozen=True)
class Sample:
    indices: np.ndarray  # into the ImageSet, class-major, ascending within a class
    classes: tuple[int, ...]
    fingerprint: str


def sample(images: ImageSet, sampling: Sampling) -> Sample:
    """P classes (all, or a seeded choice) × M images each (seeded, without replacement; with
    ``up_to``, every image of a class that has fewer than M)."""
    rng = np.random.default_rng(sampling.seed)
    present, counts = np.unique(images.labels, return_counts=True)
    picked = choose_classes(present, counts, sampling, rng, images.classes)
    chosen = []
    for label in present[picked]:
        members = np.flatnonzero(images.labels == label)
        if sampling.per_class is not None:
            size = min(sampling.per_class, members.size)  # smaller only when up_to allows it
            members = np.sort(rng.choice(members, size=size, replace=False))
        chosen.append(members)
    indices = np.concatenate(chosen).astype(np.int64)
    classes = tuple(int(c) for c in present[picked])
    return Sample(indices, classes, _fingerprint(images, sampling, classes, indices))


def choose_classes(
    present: np.ndarray,
    counts: np.ndarray,
    sampling: Sampling,
    rng: np.random.Generator,
    names: tuple[str, ...] = (),
) -> np.ndarray:
    """Positions in ``present`` (sorted labels, ``counts`` images each) of the classes to sample,
    or ``BadSampling`` when the request cannot be met.

    It needs only the per-class counts, so a dataset whose counts are static facts (builtin sets) is
    checked without being opened, with the same seeded draw ``sample`` then makes.
    """
    picked = np.arange(len(present))
    if sampling.classes is not None:
        if sampling.classes > len(present):
            raise BadSampling(f"asked for {sampling.classes} classes, the dataset has {len(present)}")
        picked = np.sort(rng.choice(picked, size=sampling.classes, replace=False))
    if sampling.per_class is not None and not sampling.up_to:
        short = [k for k in picked if counts[k] < sampling.per_class]
        if short:
            label = int(present[short[0]])
            name = names[label] if label < len(names) else str(label)
            raise BadSampling(
                f"class {name} has {int(counts[short[0]])} images, fewer than the "
                f"{sampling.per_class} asked per class"
            )
    thin = [k for k in picked if counts[k] < PER_CLASS_MIN]  # with up_to or every image: what it has
    if thin:
        label = int(present[thin[0]])
        name = names[label] if label < len(names) else str(label)
        raise BadSampling(
            f"class {name} has {int(counts[thin[0]])} image(s); the markers need at least {PER_CLASS_MIN} "
            "per class (choose classes with more, or another dataset)"
        )
    return picked


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
