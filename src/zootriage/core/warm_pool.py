"""Children started ahead of their jobs, so a job does not wait for an interpreter to import torch.

A worker keeps ``size`` sandboxed extraction children (:class:`core.isolation.Child`) that have done
their imports and wait for a request, having seen no untrusted byte yet. :meth:`WarmPool.take` hands
one to a job; each child serves exactly one job and is closed after it, so no child ever holds two
users' files.

When the replacement starts depends on the cores (``refill_at_take``). On a machine with at least
``SPARE_CORES_FOR_TAKE`` cores it is started at the take, beside the job, so back-to-back jobs (a
sweep) each find a child ready. On fewer cores it is started when the job's child is closed
(``core.scoring`` closes it after the markers): a child's start (interpreter, torch, the package
datasets: seconds of CPU) beside the job it is meant to speed up took the cores from it; on the loaded
2-core build machine the job's markers took about 30 % longer (``benchmarks/warm_job.py``), and the
replacement's memory bound is then taken with the job's memory freed. A child counts as ready once it
has said so (its imports done), and a take that finds none ready waits for the one in start, which is
nearer ready than a new one; only when none is in start (more jobs at once than ``size``) does it
start a cold child, from ``cold_factory`` when given: a child for a job that already waits skips the
warm-up meant for jobs not yet known (``core.extraction.new_child(job_waiting=True)``).

Children are started by one long-lived thread of the pool's own: bubblewrap's ``--die-with-parent``
is tied to the *thread* that started it (``PR_SET_PDEATHSIG``), so a child started by a short-lived
thread would be killed when that thread ends, and one started by the pool's thread dies with the
worker process, as it should.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable

from zootriage.core.isolation import Child

log = logging.getLogger(__name__)
SPARE_CORES_FOR_TAKE = 4  # from this many cores on, a replacement starts beside the job (module doc)


class WarmPool:
    """``size`` started children from ``factory``, refilled by the pool's own thread.

    ``wait_s``: how long a take waits for a child in start before it starts a cold one itself, from
    ``cold_factory`` (default ``factory``); ``refill_at_take``: start a replacement at each take
    (default: on ``SPARE_CORES_FOR_TAKE`` or more cores), else when the taken child is closed."""

    def __init__(
        self,
        factory: Callable[[], Child],
        size: int = 1,
        wait_s: float = 300.0,
        refill_at_take: bool | None = None,
        cold_factory: Callable[[], Child] | None = None,
    ) -> None:
        if refill_at_take is None:
            refill_at_take = (os.cpu_count() or 1) >= SPARE_CORES_FOR_TAKE
        self._refill_at_take = refill_at_take
        self._factory = factory
        self._cold_factory = cold_factory or factory
        self._size = size
        self._wait_s = wait_s
        self._ready: queue.Queue[Child] = queue.Queue()
        self._wanted: queue.Queue[bool] = queue.Queue()
        self._asked = 0  # refills asked of the pool's thread and not yet done with (under _lock)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._starter = threading.Thread(target=self._start_children, name="warm-children", daemon=True)
        self._starter.start()
        for _ in range(size):
            self._refill()

    def take(self) -> Child:
        """A started child for one job; its replacement is started now or once it is closed
        (``refill_at_take``). With none ready, waits for one in start (up to ``wait_s``), else starts a
        cold one."""
        deadline = time.monotonic() + self._wait_s
        while True:
            try:
                child = self._ready.get(timeout=0.05 if self._in_start(deadline) else 0.0)
            except queue.Empty:
                if self._in_start(deadline):
                    continue
                child = self._cold_factory()
            if child.alive():
                if self._refill_at_take:
                    self._refill()
                else:
                    child.after_close.append(self._refill)
                return child
            child.close()  # died while it waited (killed, out of memory): never hand it out
            self._refill()

    def waiting(self) -> int:
        """How many warm children wait for a job now."""
        return self._ready.qsize()

    def _in_start(self, deadline: float) -> bool:
        with self._lock:
            return self._asked > 0 and time.monotonic() < deadline and not self._closed.is_set()

    def _refill(self) -> None:
        if self._closed.is_set():
            return
        with self._lock:
            self._asked += 1
        self._wanted.put(True)

    def close(self) -> None:
        """Stop refilling and close every waiting child."""
        self._closed.set()
        self._wanted.put(False)
        self._starter.join(timeout=30)
        while True:
            try:
                self._ready.get_nowait().close()
            except queue.Empty:
                return

    def _start_children(self) -> None:
        while self._wanted.get() and not self._closed.is_set():
            try:
                self._start_one()
            finally:
                with self._lock:
                    self._asked -= 1

    def _start_one(self) -> None:
        if self._ready.qsize() >= self._size:
            return  # a cold child served a take: the pool is full already
        try:
            child = self._factory()
        except Exception:  # logged and retried at the next refill; a take then starts a cold child
            log.exception("could not start a warm child")
            return
        try:
            child.receive("ready")  # its imports done: a take hands out only children that are warm
        except Exception:
            log.exception("a warm child failed before its job")
            child.close()
            return
        if self._closed.is_set():
            child.close()
            return
        self._ready.put(child)
        log.info("warm child ready (%d waiting for a job)", self._ready.qsize())

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *_exc: object) -> None:
        with contextlib.suppress(Exception):
            self.close()
