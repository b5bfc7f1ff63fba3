"""``core.threads.run_all``: the process-wide pool that GLUE's solver blocks and geometry chunks share."""

from __future__ import annotations

import multiprocessing
import sys
import threading
import time

import pytest

from zootriage.core import threads
from zootriage.core.threads import run_all


def test_results_come_in_the_items_order_whatever_finishes_first():
    def slow_first(i: int) -> int:
        time.sleep(0.02 if i == 0 else 0.0)
        return i * i

    assert run_all(slow_first, range(6), 2) == [0, 1, 4, 9, 16, 25]


def test_one_worker_or_one_item_runs_in_the_calling_thread():
    me = threading.get_ident()
    assert run_all(lambda _: threading.get_ident(), range(3), 1) == [me] * 3
    assert run_all(lambda _: threading.get_ident(), [0], 4) == [me]


def test_several_workers_use_pool_threads_that_are_reused():
    first = set(run_all(lambda _: threading.get_ident(), range(8), 2))
    second = set(run_all(lambda _: threading.get_ident(), range(8), 2))
    assert threading.get_ident() not in first
    assert first | second <= set(t.ident for t in threading.enumerate())
    assert len(first | second) <= 2  # the same two threads, not two fresh ones per call


def test_a_failing_item_raises_and_the_queued_ones_never_start():
    started: list[int] = []

    def work(i: int) -> int:
        started.append(i)
        if i == 0:
            raise RuntimeError("boom")
        time.sleep(0.05)
        return i

    with pytest.raises(RuntimeError, match="boom"):
        run_all(work, range(20), 2)
    assert len(started) < 20


def test_a_pool_thread_calling_run_all_runs_inline_instead_of_waiting_on_its_own_pool():
    def outer(i: int) -> list[int]:
        return run_all(lambda j: i * 10 + j, range(3), 2)

    assert run_all(outer, range(2), 2) == [[0, 1, 2], [10, 11, 12]]


def _child(out: multiprocessing.Queue) -> None:
    out.put(run_all(lambda i: i + 1, range(4), 2))


def test_a_forked_child_starts_its_own_pool():
    run_all(lambda i: i, range(4), 2)  # the parent's pool exists before the fork
    assert threads._POOLS
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child, args=(out,))
    child.start()
    try:
        assert out.get(timeout=30) == [1, 2, 3, 4]
    finally:
        child.join(timeout=30)
    assert child.exitcode == 0


def test_pool_threads_hand_the_gil_over_promptly_and_the_interval_comes_back():
    before = sys.getswitchinterval()
    seen = run_all(lambda _: sys.getswitchinterval(), range(4), 2)
    assert seen == [pytest.approx(threads.SWITCH_INTERVAL)] * 4 and before > threads.SWITCH_INTERVAL
    assert sys.getswitchinterval() == before
    assert run_all(lambda _: sys.getswitchinterval(), range(4), 1) == [before] * 4  # no pool: untouched


def test_overlapping_runs_restore_the_interval_only_when_the_last_one_ends():
    before = sys.getswitchinterval()
    first_in, release = threading.Event(), threading.Event()
    during: list[float] = []

    def outer() -> None:
        def hold(i: int) -> None:
            if i == 0:
                first_in.set()
                release.wait(10)

        run_all(hold, range(2), 2)

    other = threading.Thread(target=outer)
    other.start()
    assert first_in.wait(10)
    with threads.prompt_gil_handover():  # a second analysis beside the first
        during.append(sys.getswitchinterval())
    during.append(sys.getswitchinterval())  # the first still runs
    release.set()
    other.join(10)
    assert during == [pytest.approx(threads.SWITCH_INTERVAL)] * 2
    assert sys.getswitchinterval() == before


def test_a_shorter_interval_already_set_is_kept():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        assert run_all(lambda _: sys.getswitchinterval(), range(2), 2) == [pytest.approx(1e-5)] * 2
        assert sys.getswitchinterval() == pytest.approx(1e-5)
    finally:
        sys.setswitchinterval(before)
