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

from collections.abc import Iterator
from contextlib import contextmanager

import torch


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
