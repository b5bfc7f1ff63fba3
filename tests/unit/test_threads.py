"""The CPU thread policy (core/threads.py) and its use in the solver and in the worker's pool children."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import zootriage.core.nnls
from zootriage.core.features import default_workers
from zootriage.core.threads import single_threaded, thread_budget


@pytest.mark.parametrize(
    ("cores", "processes", "loaders", "threads"),
    [(2, 1, 1, 1), (16, 1, 4, 12), (16, 2, 2, 6), (16, 8, 8, 1), (1, 1, 0, 1), (8, 1, 0, 8)],
)
def test_thread_budget_leaves_the_loaders_their_cores(cores, processes, loaders, threads):
    assert thread_budget(cores, processes, loaders) == threads


def test_single_threaded_on_the_cpu_restores_the_count_even_on_error():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pytest.raises(RuntimeError), single_threaded(torch.device("cpu")):
            assert torch.get_num_threads() == 1
            raise RuntimeError("inside")
        assert torch.get_num_threads() == 2
        with single_threaded(torch.device("meta")):
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_solver_steps_run_single_threaded_on_the_cpu(monkeypatch):
    """Every block of the batched solver sees one intra-op thread; the caller's count comes back."""
    seen: list[int] = []
    solve_block = zootriage.core.nnls._solve_block

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return solve_block(*args, **kwargs)

    monkeypatch.setattr(zootriage.core.nnls, "_solve_block", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        gen = torch.Generator().manual_seed(0)
        points = torch.randn(30, 8, generator=gen, dtype=torch.float64)
        signs = torch.where(torch.rand(5, 30, generator=gen) < 0.5, -1.0, 1.0).double()
        targets = torch.randn(5, 8, generator=gen, dtype=torch.float64)
        _, ok = zootriage.core.nnls.solve_batched(points, signs, targets)
        assert bool(ok.all())
        assert seen == [1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


_POOL_CHILD = """
import json, os, torch
from zootriage.app.settings import Settings
from zootriage.worker.gpus import prepare_pool_child
torch.set_num_threads(64)
prepare_pool_child(Settings(gpus=0))
print(json.dumps({"threads": torch.get_num_threads(), "cores": os.cpu_count()}))
"""


def test_worker_pool_child_takes_its_share_of_the_cores():
    """A CPU worker's pool child ends up with the cores its DataLoader workers leave, not torch's
    default of every core (which, with the loaders, oversubscribes the machine)."""
    out = subprocess.run(
        [sys.executable, "-c", _POOL_CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=os.environ,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    loaders = default_workers(torch.device("cpu"))
    assert got["threads"] == thread_budget(got["cores"], 1, loaders)
    assert got["threads"] != 64


def test_blocks_shared_among_threads_give_the_single_thread_answer(monkeypatch):
    """With workers > 1 the blocks of draws are solved by several threads, each block on one
    intra-op thread; the answer is the one-thread answer to rounding."""
    seen: list[int] = []
    solve_block = zootriage.core.nnls._solve_block

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return solve_block(*args, **kwargs)

    gen = torch.Generator().manual_seed(1)
    points = torch.randn(60, 12, generator=gen, dtype=torch.float64)
    signs = torch.where(torch.rand(300, 60, generator=gen) < 0.5, -1.0, 1.0).double()
    targets = torch.randn(300, 12, generator=gen, dtype=torch.float64)
    one, ok_one = zootriage.core.nnls.solve_batched(points, signs, targets, workers=1)
    monkeypatch.setattr(zootriage.core.nnls, "_BATCH_ELEMENTS", 60 * 64)  # blocks of 64 draws
    monkeypatch.setattr(zootriage.core.nnls, "_solve_block", spy)
    many, ok_many = zootriage.core.nnls.solve_batched(points, signs, targets, workers=2)
    assert len(seen) >= 4 and set(seen) == {1}
    assert bool(ok_one.all()) and bool(ok_many.all())
    assert torch.allclose(one, many, rtol=0, atol=1e-10)
