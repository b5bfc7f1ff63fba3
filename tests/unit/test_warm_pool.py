"""Warm extraction children: started ahead, one job each, closed after their job and only then
replaced; a job on a warm child gives the same features as on a cold one."""

from __future__ import annotations

import importlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
import torch

from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.extraction import new_child
from zootriage.core.extraction_child import PROGRAM_MODULES
from zootriage.core.feature_cache import FeatureCache
from zootriage.core.isolation import Child, ChildLimits
from zootriage.core.scoring import Extracted, extract_features
from zootriage.core.warm_pool import WarmPool
from zootriage.core.zoo.refs import parse_model_ref

pytestmark = pytest.mark.slow  # sandboxed children started, warm and cold


def _wait_ready(pool: WarmPool, count: int) -> None:
    deadline = time.monotonic() + 120
    while pool._ready.qsize() < count:
        assert time.monotonic() < deadline, "the pool never started its children"
        time.sleep(0.1)


@dataclass
class _Served:
    """What a pool of one warm child did for two jobs, and a cold child for the first job's sample."""

    pool: WarmPool  # still open, its next child waiting
    handed: list[Child]  # what the pool's takes handed out, in order
    warm: list[tuple[Extracted, FeatureCache]]  # one per job, in the order of SAMPLINGS
    cold: tuple[Extracted, FeatureCache]


SAMPLINGS = (Sampling(classes=3, per_class=6, seed=4), Sampling(classes=3, per_class=6, seed=5))


@pytest.fixture(scope="module")
def served(digit_programs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Served]:
    """The jobs that the tests of fresh children and of warm-equals-cold look at, run once for both:
    each child's start is seconds of CPU (an interpreter importing torch). The cold child starts while
    the pool starts its first one, so on two cores the two starts overlap."""
    folder = tmp_path_factory.mktemp("served")
    model, dataset = parse_model_ref(f"ckpt:{digit_programs['ccexam']}"), parse_dataset_ref("builtin:mnist")
    handed: list[Child] = []

    def extract(
        sampling: Sampling, name: str, child: Callable[[], Child] | None
    ) -> tuple[Extracted, FeatureCache]:
        cache = FeatureCache.folder(folder / name)
        return extract_features(model, dataset, sampling, cache=cache, child=child, num_workers=0), cache

    with WarmPool(new_child, size=1) as pool:

        def take() -> Child:
            handed.append(pool.take())
            return handed[-1]

        with pytest.MonkeyPatch.context() as patch:
            # the worker's thread setting (one here, not the machine's default) is what every child uses
            patch.setattr(torch, "get_num_threads", lambda: 1)
            cold = extract(SAMPLINGS[0], "cold", None)
            _wait_ready(pool, 1)
            warm: list[tuple[Extracted, FeatureCache]] = []
            for index, sampling in enumerate(SAMPLINGS):
                warm.append(extract(sampling, f"warm{index}", take))
                _wait_ready(pool, 1)  # the replacement is started once the job's child is closed
        yield _Served(pool, handed, warm, cold)


def test_each_job_gets_a_fresh_started_child_that_is_closed_after_it(served: _Served) -> None:
    handed, ((first, _), (second, _)) = served.handed, served.warm
    assert len(handed) == 2 and handed[0] is not handed[1]
    assert all(not child.alive() and not child.folder.exists() for child in handed)
    assert first.dataset_fingerprint != second.dataset_fingerprint
    waiting = served.pool._ready.queue[0]
    assert waiting.alive() and waiting not in handed
    served.pool.close()
    assert not waiting.alive() and not waiting.folder.exists()  # the pool closed what still waited


def test_a_warm_child_extracts_what_a_cold_one_does(served: _Served) -> None:
    (cold, cold_cache), (warm, warm_cache) = served.cold, served.warm[0]
    assert warm.cache_key == cold.cache_key and warm.dataset_fingerprint == cold.dataset_fingerprint
    cold_entry, warm_entry = cold_cache.read(cold.cache_key), warm_cache.read(warm.cache_key)
    assert cold_entry is not None and warm_entry is not None
    np.testing.assert_array_equal(cold_entry[0].features, warm_entry[0].features)
    np.testing.assert_array_equal(cold_entry[0].labels, warm_entry[0].labels)
    assert cold_entry[1]["threads"] == warm_entry[1]["threads"] == 1


def test_a_child_that_died_while_waiting_is_never_handed_out() -> None:
    made: list[Child] = []

    def factory() -> Child:
        """A real child, to be killed while it waits; then stand-ins: which child the take hands out is
        what counts, and a real replacement would be another start of torch."""
        made.append(new_child() if not made else cast(Child, _Stand_in()))
        return made[-1]

    with WarmPool(factory, size=1) as pool:
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


class _Stand_in:
    """What the pool uses of a child, without a process: alive until closed, close runs its hooks."""

    def __init__(self) -> None:
        self.after_close: list[Any] = []
        self.closed = False

    def alive(self) -> bool:
        return not self.closed

    def receive(self, *_args: object) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        self.closed = True
        hooks, self.after_close = self.after_close, []
        for hook in hooks:
            hook()


def _recording(made: list[_Stand_in]) -> Callable[[], Child]:
    """A factory of stand-ins that appends each one it makes to ``made``."""

    def factory() -> Child:
        made.append(_Stand_in())
        return cast(Child, made[-1])

    return factory


def test_on_few_cores_the_replacement_starts_only_when_the_taken_child_is_closed() -> None:
    made: list[_Stand_in] = []
    factory = _recording(made)
    with WarmPool(factory, size=1, refill_at_take=False) as pool:
        _wait_ready(pool, 1)
        taken = pool.take()
        time.sleep(0.5)  # a replacement started at the take would be made by now
        assert len(made) == 1 and pool.waiting() == 0
        taken.close()
        _wait_ready(pool, 1)
        assert len(made) == 2 and pool.take() is cast(Child, made[1])


def test_on_many_cores_the_replacement_starts_at_the_take_so_back_to_back_jobs_find_one_ready() -> None:
    made: list[_Stand_in] = []
    factory = _recording(made)
    with WarmPool(factory, size=1, refill_at_take=True) as pool:
        _wait_ready(pool, 1)
        taken = pool.take()
        _wait_ready(pool, 1)  # while the first job still holds its child
        assert len(made) == 2 and not taken.after_close
        assert pool.take() is cast(Child, made[1])


@pytest.mark.parametrize(("cores", "at_take"), [(2, False), (3, False), (4, True), (16, True)])
def test_the_refill_follows_the_cores(monkeypatch: pytest.MonkeyPatch, cores: int, at_take: bool) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    with WarmPool(lambda: cast(Child, _Stand_in()), size=0) as pool:
        assert pool._refill_at_take is at_take


def test_a_take_waits_for_the_child_in_start_instead_of_starting_another() -> None:
    made: list[_Stand_in] = []
    slow = threading.Event()

    def factory() -> Child:
        made.append(_Stand_in())
        if len(made) == 2:
            slow.wait(30)  # the replacement's start is under way when the next job comes
        return cast(Child, made[-1])

    with WarmPool(factory, size=1) as pool:
        _wait_ready(pool, 1)
        pool.take().close()
        threading.Timer(0.5, slow.set).start()
        child = pool.take()
        assert child is cast(Child, made[1]) and len(made) == 2


def test_more_jobs_than_children_start_a_cold_child_from_the_cold_factory() -> None:
    """With none ready and none in start (a second job while the only child serves the first), the
    waiting job's child comes from ``cold_factory``, which skips the warm-up of jobs not yet known."""
    warm: list[_Stand_in] = []
    cold: list[_Stand_in] = []
    with WarmPool(_recording(warm), size=1, refill_at_take=False, cold_factory=_recording(cold)) as pool:
        _wait_ready(pool, 1)
        first = pool.take()
        second = pool.take()
        assert first is cast(Child, warm[0]) and second is cast(Child, cold[0]) and len(warm) == 1
        second.close()
        _wait_ready(pool, 1)  # its replacement is a warm one again
        assert len(warm) == 2 and len(cold) == 1
        first.close()


def test_the_worker_pool_starts_lean_children_for_waiting_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    from zootriage.worker import warm

    started: list[dict[str, object]] = []

    def recording_child(*args: object, **kwargs: object) -> Child:
        started.append(kwargs)
        return cast(Child, _Stand_in())

    monkeypatch.setattr(warm, "new_child", recording_child)
    warm._pool.cache_clear()
    try:
        pool = warm._pool(ChildLimits(), False, (), 0)
        pool._cold_factory()
        pool._factory()
        assert started == [{"job_waiting": True}, {}]
        pool.close()
    finally:
        warm._pool.cache_clear()


def test_a_killed_child_runs_nothing_more_and_close_reaps_it_and_removes_its_folder() -> None:
    child = new_child()
    assert child.proc is not None
    child.kill()
    assert child.proc.wait(timeout=30) == -signal.SIGKILL
    child.close()
    assert not child.alive() and not child.folder.exists()


def test_what_the_warm_child_imports_for_programs_exists_in_this_torch() -> None:
    """A module renamed by a torch upgrade would be skipped in silence and cost each job its import."""
    for name in PROGRAM_MODULES:
        importlib.import_module(name)


def test_the_childs_openmp_threads_sleep_at_barriers_unless_the_operator_says_otherwise(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from zootriage.core.isolation import ChildLimits, _environment

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert _environment(tmp_path, ChildLimits(), False, 1 << 30, "json", True)["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert _environment(tmp_path, ChildLimits(), False, 1 << 30, "json", True)["OMP_WAIT_POLICY"] == "ACTIVE"


@pytest.mark.parametrize("gpu", [False, True])
def test_only_a_child_for_gpu_work_is_told_to_set_cuda_up(tmp_path: Path, gpu: bool) -> None:
    from zootriage.core.confine import GPU_ENV
    from zootriage.core.isolation import ChildLimits, _environment

    assert (_environment(tmp_path, ChildLimits(), gpu, 1 << 30, "json", True).get(GPU_ENV) == "1") is gpu


@pytest.mark.gpu
def test_a_warm_child_for_gpu_work_has_created_its_cuda_context_before_its_job() -> None:
    with new_child(gpu=True) as child:
        assert child.receive("ready")["devices"] == ["cpu", "cuda"]
    with new_child(gpu=False) as child:
        assert child.receive("ready")["devices"] == ["cpu"]
