"""Warm extraction children: started ahead, one job each, replaced at once, closed after their job;
a job on a warm child gives the same features as on a cold one."""

from __future__ import annotations

import functools
import time
from pathlib import Path

import numpy as np
import pytest

from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.extraction import new_child
from zootriage.core.feature_cache import FeatureCache
from zootriage.core.isolation import Child
from zootriage.core.scoring import extract_features
from zootriage.core.warm_pool import WarmPool
from zootriage.core.zoo.refs import parse_model_ref


def _wait_ready(pool: WarmPool, count: int) -> None:
    deadline = time.monotonic() + 120
    while pool._ready.qsize() < count:
        assert time.monotonic() < deadline, "the pool never started its children"
        time.sleep(0.1)


def test_each_job_gets_a_fresh_started_child_that_is_closed_after_it(
    digit_programs: dict[str, Path], tmp_path: Path
) -> None:
    handed: list[Child] = []
    with WarmPool(new_child, size=1) as pool:
        _wait_ready(pool, 1)

        def take() -> Child:
            child = pool.take()
            handed.append(child)
            return child

        results = []
        for seed in (0, 1):
            cache = FeatureCache.folder(tmp_path / f"cache{seed}")
            results.append(extract_features(
                parse_model_ref(f"ckpt:{digit_programs['ccexam']}"), parse_dataset_ref("builtin:mnist"),
                Sampling(classes=2, per_class=8, seed=seed), cache=cache, child=take, num_workers=0,
            ))
            _wait_ready(pool, 1)  # the replacement is started while (or after) the job runs
        assert len(handed) == 2 and handed[0] is not handed[1]
        assert all(not child.alive() and not child.folder.exists() for child in handed)
        assert results[0].dataset_fingerprint != results[1].dataset_fingerprint
        waiting = pool._ready.queue[0]
        assert waiting.alive() and waiting not in handed
    assert not waiting.alive() and not waiting.folder.exists()  # the pool closed what still waited


def test_a_warm_child_extracts_what_a_cold_one_does(digit_programs: dict[str, Path], tmp_path: Path) -> None:
    model = parse_model_ref(f"ckpt:{digit_programs['ccexam']}")
    dataset, sampling = parse_dataset_ref("builtin:mnist"), Sampling(classes=3, per_class=6, seed=4)
    cold_cache, warm_cache = FeatureCache.folder(tmp_path / "cold"), FeatureCache.folder(tmp_path / "warm")
    cold = extract_features(model, dataset, sampling, cache=cold_cache, num_workers=0)
    with WarmPool(functools.partial(new_child), size=1) as pool:
        _wait_ready(pool, 1)
        warm = extract_features(model, dataset, sampling, cache=warm_cache, child=pool.take, num_workers=0)
    assert warm.cache_key == cold.cache_key and warm.dataset_fingerprint == cold.dataset_fingerprint
    cold_entry, warm_entry = cold_cache.read(cold.cache_key), warm_cache.read(warm.cache_key)
    assert cold_entry is not None and warm_entry is not None
    np.testing.assert_array_equal(cold_entry[0].features, warm_entry[0].features)
    np.testing.assert_array_equal(cold_entry[0].labels, warm_entry[0].labels)


def test_a_child_that_died_while_waiting_is_never_handed_out() -> None:
    with WarmPool(new_child, size=1) as pool:
        _wait_ready(pool, 1)
        dead = pool._ready.queue[0]
        assert dead.proc is not None
        dead.proc.kill()
        dead.proc.wait()
        child = pool.take()
        try:
            assert child is not dead and child.alive()
            assert not dead.folder.exists()
        finally:
            child.close()


def test_the_parent_never_opens_the_dataset(
    digit_programs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child samples and reports the fingerprint: nothing is opened twice, and the (untrusted)
    archive is opened only inside the sandbox (the parent's archive reader refuses, the child's runs)."""
    import zootriage.core.data.open as data_open

    root = tmp_path / "root"
    root.mkdir()
    rng = np.random.default_rng(0)
    np.savez(root / "digits.npz", images=rng.integers(0, 255, (12, 28, 28), dtype=np.uint8),
             labels=np.repeat(np.arange(3), 4))

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the parent opened the dataset")

    monkeypatch.setattr(data_open, "open_archive", refuse)
    result = extract_features(
        parse_model_ref(f"ckpt:{digit_programs['ccexam']}"), parse_dataset_ref("archive:digits.npz"),
        Sampling(classes=2, per_class=3, seed=2), cache=FeatureCache.folder(tmp_path / "c"),
        data_roots=[root], num_workers=0,
    )
    assert result.n_classes == 2
