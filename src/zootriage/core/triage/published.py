"""ID accuracy from the weights' own metadata, for runs whose logits do not match the data's labels.

ImageNet weights scored on another label space have no measured ``id_accuracy``: their logits name
ImageNet's classes, not the dataset's. Their ID accuracy on their own label space is published with
the weights (torchvision's ``meta['_metrics']['ImageNet-1K']['acc@1']``, stored with the run as
``model_meta['acc1']`` by the worker), in percent. It counts as their ID accuracy (issue 24).

Its noise: acc@1 is a proportion over the N = 50,000 images of ImageNet-1k's validation set, so its
binomial standard error is se = sqrt(p(1 − p)/N) (≈ 0.002 at p = 0.8). Two weights' acc@1 are
compared as independent proportions (``core.noise.compare`` with df = ∞); they were measured on the
same images, so the paired difference is, if anything, less noisy than this, and the test is
conservative.

A measured ID accuracy and a published one are on different label spaces and never compared with
each other: ``with_published`` substitutes the published value only when no candidate of the
question has a measured one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from zootriage.core.noise import Estimate
from zootriage.core.triage.records import ID_ACCURACY, MarkerRecord

IMAGENET_VAL_IMAGES = 50_000
PUBLISHED_SOURCE = (
    "the weights' published ImageNet-1k acc@1 (their own label space; binomial se over 50,000 images)"
)


def published_accuracy(acc1_percent: float | None) -> Estimate | None:
    """acc@1 in percent as a fraction with its binomial standard error; None when not published or
    not a percentage."""
    if acc1_percent is None or not math.isfinite(acc1_percent) or not 0.0 <= acc1_percent <= 100.0:
        return None
    p = acc1_percent / 100.0
    return Estimate(p, math.sqrt(p * (1.0 - p) / IMAGENET_VAL_IMAGES), math.inf)


def with_published(
    records: Sequence[MarkerRecord], acc1: Mapping[str, float | None]
) -> tuple[list[MarkerRecord], bool]:
    """The records with ``id_accuracy`` taken from the published acc@1 (``acc1[name]``, percent) where
    it was not measured, and whether any was; unchanged when some record has a measured ID accuracy
    (the two are on different label spaces)."""
    if any(r.value(ID_ACCURACY) is not None for r in records):
        return list(records), False
    out, used = [], False
    for record in records:
        found = published_accuracy(acc1.get(record.name))
        if found is None:
            out.append(record)
            continue
        out.append(replace(record, published={**record.published, ID_ACCURACY: found}))
        used = True
    return out, used
