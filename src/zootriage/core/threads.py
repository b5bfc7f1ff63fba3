"""How many CPU threads torch may use, so that compute does not collapse when cores are contended.

torch's intra-op pool (OpenMP) splits each operation over its threads and joins them at a barrier.
GLUE's solver is a long chain of small dense steps (passive systems of |S| ≤ a few hundred, gathers
over B × n), so every step pays the barrier; when another process holds a core, one of the threads is
descheduled and every barrier waits a time slice for it. Measured on the 2-core build machine
(P=10 × M=50, N=512, n_t=500, load ≈ 10): 3.9 s with one thread, 18.5 s with two. GLUE (every
stage of core.glue.analyze, and the solver wherever it is called) therefore runs single-threaded on
the CPU, and a worker process gets no more threads than the cores its share of the machine leaves
after its data-loading processes (no oversubscription).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TypeVar

import torch

T = TypeVar("T")
R = TypeVar("R")
# Process-wide pools by size, started once: a fresh pool per solve and per geometry pass started its
# threads every analysis (1–3 ms each on the loaded 2-core machine, four per analysis).
_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
_IN_POOL = threading.local()
# A forked child inherits the dict but not the threads: its pools would never run a task.
os.register_at_fork(after_in_child=_POOLS.clear)
# The interpreter's switch interval while pool threads run (seconds; Python's default is 0.005).
SWITCH_INTERVAL = 2e-4
_SWITCH_LOCK = threading.Lock()
_switch = {"users": 0, "before": 0.0}


def thread_budget(cores: int, processes: int, loaders: int) -> int:
    """Intra-op threads for each of ``processes`` worker processes sharing ``cores`` cores, when each
    process also runs ``loaders`` DataLoader workers: the cores the loaders leave, shared evenly, and
    at least one."""
    return max(1, (cores - processes * loaders) // max(1, processes))


@contextmanager
def single_threaded(device: torch.device) -> Iterator[None]:
    """Run the block with one intra-op thread when ``device`` is the CPU (restored afterwards);
    on a GPU the host threads only launch kernels and are left alone."""
    if device.type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _mark_pool_thread() -> None:
    _IN_POOL.active = True


@contextmanager
def prompt_gil_handover() -> Iterator[None]:
    """Run the block with the interpreter's switch interval at most ``SWITCH_INTERVAL`` (restored
    when the last of any overlapping blocks ends).

    The pool's threads each run a chain of small torch operations, and every one of them releases the
    GIL around its kernel. The GIL is not handed over fairly: a thread that releases it and asks again
    a few microseconds later usually takes it back before the woken waiter runs, and the waiter then
    sleeps until the switch interval forces a hand-over (5 ms by default). With 0.2 ms the solver's two
    blocks (P = 10 × M = 50, N = 512, n_t = 400, two threads, 2-core build machine) took 51–53 ms
    against 56–60 ms; 10 µs to 0.5 ms all gave the same (docs/glue_cost.md)."""
    with _SWITCH_LOCK:
        if _switch["users"] == 0:
            _switch["before"] = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch["before"], SWITCH_INTERVAL))
        _switch["users"] += 1
    try:
        yield
    finally:
        with _SWITCH_LOCK:
            _switch["users"] -= 1
            if _switch["users"] == 0:
                sys.setswitchinterval(_switch["before"])


def run_all(fn: Callable[[T], R], items: Iterable[T], workers: int) -> list[R]:
    """``[fn(item) for item in items]``, shared among ``workers`` threads of a process-wide pool
    (results in the items' order), the GIL handed over promptly meanwhile (``prompt_gil_handover``).
    Runs in the calling thread when ``workers`` ≤ 1, for a single item, or when called from a pool
    thread (a task waiting on its own pool could wait forever). If one item fails, the items not yet
    started are cancelled and its exception is raised."""
    todo = list(items)
    if workers <= 1 or len(todo) <= 1 or getattr(_IN_POOL, "active", False):
        return [fn(item) for item in todo]
    size = min(workers, len(todo))
    with _POOLS_LOCK:
        pool = _POOLS.get(size)
        if pool is None:
            pool = _POOLS[size] = ThreadPoolExecutor(size, "glue", initializer=_mark_pool_thread)
    with prompt_gil_handover():
        futures = [pool.submit(fn, item) for item in todo]
        try:
            return [f.result() for f in futures]
        finally:  # a cancelled or failed item: the queued ones never start, the running ones end first
            for waiting in futures:
                waiting.cancel()
            wait(futures)
