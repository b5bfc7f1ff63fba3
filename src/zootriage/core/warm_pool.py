"""Children started ahead of their jobs, so a job does not wait for an interpreter to import torch.

A worker keeps ``size`` sandboxed extraction children (:class:`core.isolation.Child`) that have done
their imports and wait for a request, having seen no untrusted byte yet. :meth:`WarmPool.take` hands
one to a job and asks for a replacement at once; each child serves exactly one job and is closed
after it, so no child ever holds two users' files.

Children are started by one long-lived thread of the pool's own: bubblewrap's ``--die-with-parent``
is tied to the *thread* that started it (``PR_SET_PDEATHSIG``), so a child started by a short-lived
thread would be killed when that thread ends, and one started by the pool's thread dies with the
worker process, as it should.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable

from zootriage.core.isolation import Child

log = logging.getLogger(__name__)


class WarmPool:
    """``size`` started children from ``factory``, refilled by the pool's own thread."""

    def __init__(self, factory: Callable[[], Child], size: int = 1) -> None:
        self._factory = factory
        self._size = size
        self._ready: queue.Queue[Child] = queue.Queue()
        self._wanted: queue.Queue[bool] = queue.Queue()
        self._closed = threading.Event()
        self._starter = threading.Thread(target=self._start_children, name="warm-children", daemon=True)
        self._starter.start()
        for _ in range(size):
            self._wanted.put(True)

    def take(self) -> Child:
        """A started child for one job (a cold one when none is ready yet); a replacement is started."""
        self._wanted.put(True)
        while True:
            try:
                child = self._ready.get_nowait()
            except queue.Empty:
                return self._factory()
            if child.alive():
                return child
            child.close()  # died while it waited (killed, out of memory): never hand it out

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
            if self._ready.qsize() >= self._size:
                continue  # a cold child served a take: the pool is full already
            try:
                child = self._factory()
            except Exception:  # logged and retried at the next take; a job then starts a cold child
                log.exception("could not start a warm child")
                continue
            if self._closed.is_set():
                child.close()
                return
            self._ready.put(child)

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *_exc: object) -> None:
        with contextlib.suppress(Exception):
            self.close()
