"""Package datasets are loaded once per process even when a burst of threads asks at the same time."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from zootriage.core.data.builtin import loaded_once
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import parse_dataset_ref


def test_concurrent_first_calls_share_one_load() -> None:
    calls = 0
    callers = 8
    arrived = threading.Barrier(callers)

    @loaded_once
    def load() -> list[int]:
        nonlocal calls
        calls += 1
        time.sleep(0.2)  # a slow load: every caller is waiting while it runs
        return [calls]

    def call() -> list[int]:
        arrived.wait()
        return load()

    with ThreadPoolExecutor(callers) as pool:
        results = list(pool.map(lambda _: call(), range(callers)))
    assert calls == 1
    assert all(result is results[0] for result in results)


def test_builtin_mnist_opened_from_many_threads_is_one_array() -> None:
    ref = parse_dataset_ref("builtin:mnist")
    with ThreadPoolExecutor(4) as pool:
        sets = list(pool.map(lambda _: open_dataset(ref, "test", roots=[]), range(4)))
    assert len({id(s.labels) for s in sets}) == 1
    assert len(sets[0].labels) == 10_000
