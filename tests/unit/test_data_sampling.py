"""Seeded class-balanced sampling and its fingerprint."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.data.sampling import sample
from zootriage.core.errors import BadSampling


def test_balanced_seeded_and_reproducible() -> None:
    animals = open_dataset(parse_dataset_ref("builtin:animal-mnist"))
    request = Sampling(classes=4, per_class=25, seed=3)
    first = sample(animals, request)
    again = sample(open_dataset(parse_dataset_ref("builtin:animal-mnist")), request)
    assert np.array_equal(first.indices, again.indices) and first.fingerprint == again.fingerprint
    assert len(first.classes) == 4 and np.bincount(animals.labels[first.indices]).max() == 25
    assert len(set(first.indices.tolist())) == 100
    other = sample(animals, Sampling(classes=4, per_class=25, seed=4))
    assert other.fingerprint != first.fingerprint


def test_fingerprint_separates_sources_and_splits() -> None:
    request = Sampling(classes=None, per_class=5, seed=0)
    test = sample(open_dataset(parse_dataset_ref("builtin:mnist"), "test"), request)
    val = sample(open_dataset(parse_dataset_ref("builtin:mnist"), "val"), request)
    assert test.fingerprint != val.fingerprint
    assert len(test.classes) == 10 and len(test.indices) == 50


def test_folder_fingerprint_covers_file_content(tmp_path: Path) -> None:
    for label in ("a", "b"):
        (tmp_path / "set" / label).mkdir(parents=True)
        for k in range(3):
            Image.new("L", (8, 8), color=k * 40).save(tmp_path / "set" / label / f"{k}.png")
    ref = parse_dataset_ref("folder:set")
    request = Sampling(per_class=2, seed=1)
    before = sample(open_dataset(ref, roots=[tmp_path]), request)
    chosen = open_dataset(ref, roots=[tmp_path]).loader.paths[int(before.indices[0])]  # type: ignore[attr-defined]
    Image.new("L", (8, 8), color=255).save(chosen)
    after = sample(open_dataset(ref, roots=[tmp_path]), request)
    assert np.array_equal(before.indices, after.indices) and before.fingerprint != after.fingerprint


def test_requests_the_data_cannot_satisfy() -> None:
    digits = open_dataset(parse_dataset_ref("builtin:digits"))
    with pytest.raises(BadSampling, match="fewer than the 500 asked"):
        sample(digits, Sampling(per_class=500))
    with pytest.raises(BadSampling, match="asked for 11 classes"):
        sample(digits, Sampling(classes=11, per_class=5))
