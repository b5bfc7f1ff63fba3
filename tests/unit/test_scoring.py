"""``score``: the worker's one call, end to end on a real checkpoint and real images."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pytest

from zootriage.core import scoring
from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.errors import CheckpointUnsafe, InsufficientStorage, PathOutsideRoots, ZooError
from zootriage.core.extraction import Sampled
from zootriage.core.feature_cache import FeatureCache
from zootriage.core.markers import Protocol
from zootriage.core.sample_records import known_sample, remember_sample
from zootriage.core.scoring import score
from zootriage.core.zoo.refs import parse_model_ref
from zootriage.core.zoo.weights import sha256_file

pytestmark = pytest.mark.slow  # real scorings, one sandboxed child each

QUICK = Protocol(points_per_class=20, n_t=100, seed=0)


def test_score_in_label_space(
    digit_programs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, int, int]] = []
    sampling = Sampling(classes=4, per_class=20, seed=1)
    cache = FeatureCache.folder(tmp_path / "cache")
    # A record the child will contradict (a stale one): the cache misses under it, the child samples,
    # and the record is written again from what the child reported.
    stale = Sampled(fingerprint="0" * 64, classes=4, images=80, label_space="digits")
    remember_sample(cache, parse_dataset_ref("builtin:mnist"), sampling, stale)
    result = score(
        parse_model_ref(f"ckpt:{digit_programs['ccexam']}"), parse_dataset_ref("builtin:mnist"),
        sampling, QUICK, progress=lambda *e: events.append(e), cache=tmp_path / "cache",
    )
    assert result.weights_sha256 == sha256_file(digit_programs["ccexam"])
    assert result.n_images == 80 and result.n_classes == 4 and result.feature_dim == 128
    assert result.logits_match_labels and result.device == "cpu" and not result.features_cached
    assert result.markers["id_accuracy"].applicable and result.markers["id_accuracy"].value >= 0.95
    assert result.markers["dimension"].applicable and result.markers["dimension"].value > 0
    assert set(result.timings) == {"load_model", "sample", "extract", "markers", "child"}
    assert {stage for stage, _, _ in events} == {"load_model", "sample", "extract", "markers"}
    assert result.to_dict()["markers"]["id_accuracy"]["value"] == result.markers["id_accuracy"].value

    # The child's report of the builtin set's sample is recorded beside the features ...
    recorded = known_sample(cache, parse_dataset_ref("builtin:mnist"), sampling)
    assert recorded is not None and recorded.fingerprint == result.dataset_fingerprint
    assert (recorded.classes, recorded.images, recorded.label_space) == (4, 80, "digits")
    # ... so scoring them again under another protocol starts no child at all
    monkeypatch.setattr(scoring, "new_child", lambda *_a, **_k: pytest.fail("a child was started"))
    again_events: list[tuple[str, int, int]] = []
    again = score(
        parse_model_ref(f"ckpt:{digit_programs['ccexam']}"), parse_dataset_ref("builtin:mnist"),
        sampling, Protocol(points_per_class=10, n_t=50, seed=0), cache=tmp_path / "cache",
        progress=lambda *e: again_events.append(e),
    )
    assert again.features_cached and again.dataset_fingerprint == result.dataset_fingerprint
    assert set(again.timings) == {"sample", "extract", "markers"}  # no child: nothing sampled, no model
    assert {stage for stage, _, _ in again_events} == {"sample", "extract", "markers"}
    assert again.model == result.model and again.weights_sha256 == result.weights_sha256
    assert again.markers["id_accuracy"].value == result.markers["id_accuracy"].value
    assert len(list((tmp_path / "cache").rglob("*.npz"))) == 1


def test_other_label_space_makes_label_logit_markers_not_applicable(digit_programs: dict[str, Path]) -> None:
    result = score(
        parse_model_ref(f"ckpt:{digit_programs['clntrained']}"), parse_dataset_ref("builtin:animal-mnist"),
        Sampling(classes=3, per_class=15, seed=0), QUICK,
    )
    assert not result.logits_match_labels
    for name in ("id_accuracy", "confidence_auroc", "logit_margin"):
        assert not result.markers[name].applicable, name
    for name in ("mean_confidence", "entropy", "energy"):
        assert result.markers[name].applicable and np.isfinite(result.markers[name].value), name


def test_bad_input_raises_zoo_errors(digit_programs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(PathOutsideRoots) as info:
        score(parse_model_ref(f"ckpt:{digit_programs['ccexam']}"), parse_dataset_ref("folder:../etc"),
              Sampling(), QUICK, data_roots=[tmp_path])
    assert isinstance(info.value, ZooError) and info.value.to_dict()["code"] == "path_outside_roots"


@pytest.mark.parametrize(
    ("errno_code", "raised"), [(errno.ENOSPC, InsufficientStorage), (errno.EACCES, OSError)]
)
def test_a_failed_cache_write_leaves_no_temporary_file(
    digit_programs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    errno_code: int, raised: type[Exception],
) -> None:
    """The disk fills up halfway through the entry: its temporary file is removed and a full disk is
    ``insufficient_storage``, not a bug; any other write error propagates as it is. Nothing is left in
    the cache, not even the sample's record (written only once its features are)."""

    def half_written(handle: BinaryIO, **_arrays: np.ndarray) -> None:
        handle.write(b"PK\x03\x04" + b"\0" * 4096)
        raise OSError(errno_code, os.strerror(errno_code))

    monkeypatch.setattr(np, "savez", half_written)
    cache = tmp_path / "cache"
    with pytest.raises(raised) as info:
        score(
            parse_model_ref(f"ckpt:{digit_programs['ccexam']}"), parse_dataset_ref("builtin:mnist"),
            Sampling(classes=2, per_class=10, seed=0), QUICK, cache=cache,
        )
    assert [p for p in cache.rglob("*") if p.is_file()] == []
    if raised is InsufficientStorage:
        assert info.value.code == "insufficient_storage"
    else:
        assert info.value.errno == errno_code


def test_a_child_that_claims_another_checkpoints_hash_fails_its_job(
    digit_programs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the child says of the weights is what code in it chose to say: a checkpoint whose child
    reports another upload's hash (and so would take that upload's runs and baselines) is refused,
    and nothing of it is cached."""
    real = scoring.extract_in

    def lying(*args: object, **kwargs: object) -> tuple[object, dict[str, object]]:
        extraction, described = real(*args, **kwargs)  # type: ignore[arg-type]
        return extraction, {**described, "weights_sha256": sha256_file(digit_programs["clntrained"])}

    monkeypatch.setattr(scoring, "extract_in", lying)
    with pytest.raises(CheckpointUnsafe, match="not the uploaded checkpoint's"):
        score(
            parse_model_ref(f"ckpt:{digit_programs['ccexam']}"), parse_dataset_ref("builtin:mnist"),
            Sampling(classes=3, per_class=10, seed=0), QUICK, cache=tmp_path / "cache",
        )
    assert not list((tmp_path / "cache").rglob("*.npz"))
