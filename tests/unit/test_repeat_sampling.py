"""The default image sample is large enough for disjoint GLUE repeats, capped by each class's size."""

from __future__ import annotations

import numpy as np

from zootriage.app.schemas.jobs import JobRequest
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import PER_CLASS_MAX, Sampling, parse_dataset_ref
from zootriage.core.data.sampling import sample
from zootriage.core.markers import Protocol


def test_default_per_class_is_points_times_repeats_and_explicit_requests_are_kept() -> None:
    protocol = Protocol()
    filled = Sampling(seed=2).for_repeats(protocol.points_per_class, protocol.repeats)
    assert filled.per_class == 50 * protocol.repeats and filled.up_to and filled.seed == 2
    assert filled.for_repeats(10, 2) == filled  # filled once, never again
    assert Sampling(per_class=50).for_repeats(50, 5) == Sampling(per_class=50)
    assert Sampling(per_class=None).for_repeats(50, 5).per_class is None
    assert Sampling().for_repeats(None, 5).per_class is None
    assert Sampling().for_repeats(10_000, 100).per_class == PER_CLASS_MAX


def test_a_job_request_fills_the_sample_from_its_protocol() -> None:
    model = {"source": "torchvision", "arch": "resnet18"}
    base = {"model": model, "dataset": {"source": "builtin", "name": "mnist"}}
    default = JobRequest.model_validate(base)
    assert default.sampling.per_class == 250 and default.sampling.up_to
    custom = JobRequest.model_validate({**base, "protocol": {"points_per_class": 20, "repeats": 3}})
    assert custom.sampling.per_class == 60
    again = JobRequest.model_validate(default.model_dump(mode="json"))
    assert again.sampling == default.sampling  # the stored request reads back as it was sent
    explicit = JobRequest.model_validate({**base, "sampling": {"per_class": 50}})
    assert explicit.sampling.per_class == 50 and not explicit.sampling.up_to


def test_up_to_takes_every_image_of_a_short_class() -> None:
    digits = open_dataset(parse_dataset_ref("builtin:digits"))
    sizes = np.bincount(digits.labels)  # 174 to 183 images per digit
    taken = sample(digits, Sampling(per_class=180, up_to=True, seed=1))
    counts = np.bincount(digits.labels[taken.indices])
    assert counts.tolist() == np.minimum(sizes, 180).tolist() and sizes.min() < 180 < sizes.max()
    assert np.unique(taken.indices).size == taken.indices.size
