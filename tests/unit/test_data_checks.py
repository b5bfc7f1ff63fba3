"""Static dataset checks (what the API runs at submit): bounded, and in agreement with opening."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tests.hostile_archives import HOSTILE, sparse_labels
from zootriage.core.data.archives import ArchiveLimits, check_archive
from zootriage.core.data.builtin import BUILTIN, CLASS_COUNTS
from zootriage.core.data.checks import check_dataset
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.data.sampling import sample
from zootriage.core.errors import BadArchive, BadSampling, PathOutsideRoots, UnknownDataset

LIMITS = ArchiveLimits()


@pytest.mark.parametrize(("name", "split"), [(n, s) for n, (_, splits) in BUILTIN.items() for s in splits])
def test_the_class_count_table_matches_the_opened_sets(name: str, split: str) -> None:
    opened = open_dataset(parse_dataset_ref(f"builtin:{name}"), split)
    labels, counts = np.unique(opened.labels, return_counts=True)
    assert CLASS_COUNTS[(name, split)] == dict(zip(labels.tolist(), counts.tolist(), strict=True))


def test_builtin_checks_draw_the_classes_sample_draws() -> None:
    ref = parse_dataset_ref("builtin:foolbox-imagenet")
    with pytest.raises(BadSampling, match=r"has 1 image.*at least 2 per class"):
        check_dataset(ref, Sampling(per_class=None), [], LIMITS)  # one image per class, one class has two
    with pytest.raises(BadSampling, match="fewer than the 2 asked"):
        check_dataset(ref, Sampling(per_class=2), [], LIMITS)
    with pytest.raises(BadSampling, match="asked for 20 classes"):
        check_dataset(ref, Sampling(classes=20, per_class=None), [], LIMITS)
    digits = parse_dataset_ref("builtin:digits")
    assert check_dataset(digits, Sampling(per_class=2), [], LIMITS) == 10
    with pytest.raises(BadSampling, match="fewer than the 175 asked"):
        check_dataset(digits, Sampling(per_class=175), [], LIMITS)  # class 8 has 174
    # classes=3 of mnist's val split: the check refuses exactly when sampling would
    mnist = parse_dataset_ref("builtin:mnist")
    opened = open_dataset(mnist, "val")
    for seed in range(6):
        request = Sampling(classes=3, per_class=960, seed=seed, split="val")
        try:
            sample(opened, request)
            refused = False
        except BadSampling:
            refused = True
        if refused:
            with pytest.raises(BadSampling):
                check_dataset(mnist, request, [], LIMITS)
        else:
            assert check_dataset(mnist, request, [], LIMITS) == 3


def test_paths_and_classes_refused_statically(tmp_path: Path) -> None:
    for text in ("folder:.", "folder:./.", "archive:./.npz"):
        with pytest.raises((PathOutsideRoots, UnknownDataset)):
            check_dataset(parse_dataset_ref(text), Sampling(), [tmp_path], LIMITS)
    with pytest.raises(PathOutsideRoots, match="not the root itself"):
        check_dataset(parse_dataset_ref("folder:."), Sampling(), [tmp_path], LIMITS)
    (tmp_path / "lsun").mkdir()
    with pytest.raises(UnknownDataset, match="no supported dataset class 'LSUN'"):
        check_dataset(parse_dataset_ref("torchvision:LSUN:lsun"), Sampling(), [tmp_path], LIMITS)
    cifar = parse_dataset_ref("torchvision:CIFAR10:lsun")
    assert check_dataset(cifar, Sampling(), [tmp_path], LIMITS) is None  # a folder: checked by one stat


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_archives_are_refused_from_their_headers(tmp_path: Path, kind: str) -> None:
    build, message = HOSTILE[kind]
    build(tmp_path / "hostile.npz")
    tracemalloc.start()
    try:
        with pytest.raises(BadArchive, match=message):
            check_archive("hostile.npz", [tmp_path], LIMITS)
        with pytest.raises(BadArchive, match=message):  # the worker's open runs the same checks first
            open_dataset(parse_dataset_ref("archive:hostile.npz"), roots=[tmp_path])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024


def test_label_values_are_bounded_when_opened(tmp_path: Path) -> None:
    sparse_labels(tmp_path / "sparse.npz")
    check_archive("sparse.npz", [tmp_path], LIMITS)  # the headers are fine; the values are not
    with pytest.raises(BadArchive, match="class indices"):
        open_dataset(parse_dataset_ref("archive:sparse.npz"), roots=[tmp_path])


def test_a_member_count_over_the_limit_is_refused_before_the_directory_is_read(tmp_path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(tmp_path / "many.zip", "w") as archive:
        for k in range(40):
            archive.writestr(f"c{k % 2}/{k}.png", b"x")
    with pytest.raises(BadArchive, match="40 members"):
        check_archive("many.zip", [tmp_path], ArchiveLimits(max_images=10))
