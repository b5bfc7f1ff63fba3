"""Admission control: at most as many requests use the database at once as the pool has connections.

Without it, a burst of N clients starts N sync handlers; they take the threadpool's threads, each
waits for one of the pool's connections, and those waits end as errors while the clients time out.
Here a request first waits (on the event loop, holding no thread and no connection) for one of
``POOL_CAPACITY`` slots; if none frees up within ``db_slot_wait_s`` it is answered 503 with
``Retry-After``, which is the honest answer for a saturated service. The threadpool is sized to at
least the slots, so a request that holds a slot never waits for a thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread

from zootriage.app.api.errors import ApiError


class DbSlots:
    """A semaphore with a bounded wait; made inside the running event loop (the app's lifespan)."""

    def __init__(self, capacity: int, wait_s: float) -> None:
        self.capacity = capacity
        self.wait_s = wait_s
        self._semaphore = asyncio.Semaphore(capacity)
        threads = to_thread.current_default_thread_limiter()
        threads.total_tokens = max(threads.total_tokens, capacity)

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(self.wait_s):
                await self._semaphore.acquire()
        except TimeoutError:
            raise ApiError(503, "overloaded", "the service is at capacity; retry later") from None
        try:
            yield
        finally:
            self._semaphore.release()
