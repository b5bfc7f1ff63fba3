"""``core.sample_records``: a builtin set's sample recorded in the feature cache, keyed by the request."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from zootriage.core import sample_records
from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.errors import InsufficientStorage
from zootriage.core.extraction import Sampled
from zootriage.core.feature_cache import FeatureCache
from zootriage.core.sample_records import known_sample, remember_sample, sample_key
from zootriage.core.storage import sample_entry

MNIST = parse_dataset_ref("builtin:mnist")
SAMPLING = Sampling(classes=4, per_class=20, seed=1)
SAMPLED = Sampled(fingerprint="ab" * 32, classes=4, images=80, label_space="digits")


def test_only_builtin_sets_are_recorded_and_the_key_follows_every_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Folders, archives and torchvision sets under a data root can change under one reference: never
    recorded. A builtin set's key changes with the set, each part of the sampling request, the
    package's version and ``SAMPLING_VERSION``, and with nothing else."""
    for text in ("folder:digits", "archive:digits.npz", "torchvision:MNIST:mnist", "builtin:no-such-set"):
        assert sample_key(parse_dataset_ref(text), SAMPLING) is None, text
    key = sample_key(MNIST, SAMPLING)
    assert key is not None and key == sample_key(parse_dataset_ref("builtin:mnist"), SAMPLING)
    others = {
        sample_key(parse_dataset_ref("builtin:digits"), SAMPLING),
        sample_key(MNIST, Sampling(classes=4, per_class=20, seed=2)),
        sample_key(MNIST, Sampling(classes=4, per_class=21, seed=1)),
        sample_key(MNIST, Sampling(classes=5, per_class=20, seed=1)),
        sample_key(MNIST, Sampling(classes=4, per_class=20, seed=1, split="train")),
    }
    monkeypatch.setattr(sample_records, "package_version", lambda _name: "999.0")
    others.add(sample_key(MNIST, SAMPLING))
    monkeypatch.undo()
    monkeypatch.setattr(sample_records, "SAMPLING_VERSION", 2)
    others.add(sample_key(MNIST, SAMPLING))
    assert key not in others and len(others) == 7


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    cache = FeatureCache.folder(tmp_path)
    assert known_sample(cache, MNIST, SAMPLING) is None
    remember_sample(cache, MNIST, SAMPLING, SAMPLED)
    assert known_sample(cache, MNIST, SAMPLING) == SAMPLED
    assert known_sample(cache, MNIST, Sampling(classes=4, per_class=20, seed=2)) is None
    assert known_sample(None, MNIST, SAMPLING) is None
    remember_sample(None, MNIST, SAMPLING, SAMPLED)  # no cache: nothing to do, no error
    folder = parse_dataset_ref("folder:digits")
    remember_sample(cache, folder, SAMPLING, SAMPLED)
    assert known_sample(cache, folder, SAMPLING) is None
    assert [p.name for p in (tmp_path / "samples").iterdir()] == [f"{sample_key(MNIST, SAMPLING)}.json"]


@pytest.mark.parametrize("content", [
    b"not json",
    b"[1, 2]",
    json.dumps({"fingerprint": "ab" * 32, "classes": 4, "images": 80}).encode(),
    json.dumps({"fingerprint": "ab" * 32, "classes": 4, "images": 80, "label_space": None, "x": 1}).encode(),
    json.dumps({"fingerprint": "../x", "classes": 4, "images": 80, "label_space": None}).encode(),
    json.dumps({"fingerprint": "ab" * 32, "classes": 0, "images": 80, "label_space": None}).encode(),
    json.dumps({"fingerprint": "ab" * 32, "classes": 4, "images": 3, "label_space": None}).encode(),
    json.dumps({"fingerprint": "ab" * 32, "classes": True, "images": 80, "label_space": None}).encode(),
    json.dumps({"fingerprint": "ab" * 32, "classes": 4, "images": 80.0, "label_space": None}).encode(),
    json.dumps({"fingerprint": "ab" * 32, "classes": 4, "images": 80, "label_space": 7}).encode(),
])
def test_a_damaged_record_reads_as_absent(tmp_path: Path, content: bytes) -> None:
    """Absent means the child samples again and the record is written anew: never a wrong cache key."""
    key = sample_key(MNIST, SAMPLING)
    assert key is not None
    path = tmp_path / sample_entry(key)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert known_sample(FeatureCache.folder(tmp_path), MNIST, SAMPLING) is None


def test_a_full_disk_is_insufficient_storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = FeatureCache.folder(tmp_path)

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache.store, "put_bytes", full)
    with pytest.raises(InsufficientStorage):
        remember_sample(cache, MNIST, SAMPLING, SAMPLED)
