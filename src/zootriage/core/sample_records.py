"""Sample records: what a sandboxed child reported of a builtin set's sample, kept in the feature cache
so that a job whose features are cached starts no child at all.

A job's first step is a child opening the dataset and drawing the seeded sample; its answer
(:class:`core.extraction.Sampled`: fingerprint, classes, images, label space) keys the feature cache.
For a ``builtin:`` set that answer is fixed by the request alone: the images are an installed
package's file, pinned by the package's version, and the draw is seeded. So it is recorded under

    sample key = sha256(canonical JSON of {dataset reference, sampling request, package version,
                                           SAMPLING_VERSION})

and the next job on that set and sampling looks its extraction up directly; a hit needs neither the
dataset nor a child (a cold child is an interpreter importing torch, ~3 s; a warm one is used up and
replaced). Sets whose files can change under one reference (folders, archives, torchvision sets under
a data root) are always sampled by a child, which fingerprints what it reads.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict

from zootriage.core.data.builtin import package_version
from zootriage.core.data.refs import AnyDatasetRef, BuiltinRef, Sampling
from zootriage.core.data.sampling import SAMPLING_VERSION
from zootriage.core.extraction import Sampled
from zootriage.core.feature_cache import FeatureCache

_FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")


def sample_key(dataset: AnyDatasetRef, sampling: Sampling) -> str | None:
    """The record's key, or None for a set whose sample is not fixed by the request (not builtin, or
    its package not installed: the child then says what is wrong)."""
    if not isinstance(dataset, BuiltinRef):
        return None
    version = package_version(dataset.name)
    if version is None:
        return None
    request = {
        "dataset": dataset.model_dump(mode="json"),
        "sampling": sampling.model_dump(mode="json"),
        "package_version": version,
        "sampling_version": SAMPLING_VERSION,
    }
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()


def known_sample(store: FeatureCache | None, dataset: AnyDatasetRef, sampling: Sampling) -> Sampled | None:
    """The recorded sample of this request, or None (no cache, not recordable, not recorded yet, or a
    record of the wrong shape, which is then treated as absent and written again)."""
    key = sample_key(dataset, sampling)
    record = store.read_sample(key) if store is not None and key is not None else None
    if record is None or set(record) != {"fingerprint", "classes", "images", "label_space"}:
        return None
    fingerprint, classes, images, label_space = (
        record["fingerprint"], record["classes"], record["images"], record["label_space"]
    )
    if (
        not isinstance(fingerprint, str) or not _FINGERPRINT.match(fingerprint)
        or type(classes) is not int or type(images) is not int or classes < 1 or images < classes
        or not (label_space is None or isinstance(label_space, str))
    ):
        return None
    return Sampled(fingerprint, classes, images, label_space)


def remember_sample(
    store: FeatureCache | None, dataset: AnyDatasetRef, sampling: Sampling, sampled: Sampled
) -> None:
    """Record what a child reported of this request's sample, where the request fixes it."""
    key = sample_key(dataset, sampling)
    if store is not None and key is not None:
        store.write_sample(key, asdict(sampled))
