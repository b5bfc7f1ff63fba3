"""The CPU thread policy (core/threads.py) and its use in the solver and in the worker's pool children."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict

import numpy as np
import pytest
import torch

import zootriage.core.glue_geometry
import zootriage.core.nnls
from zootriage.core.examples import relu_like
from zootriage.core.features import default_workers
from zootriage.core.glue import glue_inputs, solve_draws
from zootriage.core.glue_geometry import effective_geometry
from zootriage.core.threads import single_threaded, thread_budget

CPU = torch.device("cpu")


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


@pytest.mark.parametrize(
    ("draws", "points", "threads", "size"),
    [
        (1000, 500, 1, (1 << 22) // 500),  # one thread: the memory bound alone
        (1000, 500, 2, 500),  # fewer blocks than threads: one block per thread
        (1000, 5000, 2, 500),  # two memory-bound blocks of 838 and 162 become two of 500
        (20_000, 500, 2, 5000),  # three memory-bound blocks become four even ones
        (1000, 50_000, 2, 72),  # 13 blocks of at most 83 draws become 14 of at most 72
        (100, 500, 2, 64),  # but never below the smallest block worth a thread
        (40, 500, 4, 64),  # so a small problem stays one block
    ],
)
def test_block_size_gives_every_thread_even_blocks_within_the_memory_bound(draws, points, threads, size):
    step = zootriage.core.nnls.block_size(draws, points, threads)
    assert step == size
    assert step <= max((1 << 22) // points, 1)


def test_draws_of_one_block_are_split_among_threads(monkeypatch):
    """Fewer memory-bound blocks than threads: the draws are cut into one block per thread, and the
    answer is the one-thread answer to rounding."""
    seen: list[int] = []
    solve_block = zootriage.core.nnls._solve_block

    def spy(cloud, signs, *args, **kwargs):
        seen.append(signs.shape[0])
        return solve_block(cloud, signs, *args, **kwargs)

    gen = torch.Generator().manual_seed(2)
    points = torch.randn(60, 12, generator=gen, dtype=torch.float64)
    signs = torch.where(torch.rand(300, 60, generator=gen) < 0.5, -1.0, 1.0).double()
    targets = torch.randn(300, 12, generator=gen, dtype=torch.float64)
    one, ok_one = zootriage.core.nnls.solve_batched(points, signs, targets, workers=1)
    monkeypatch.setattr(zootriage.core.nnls, "_solve_block", spy)
    two, ok_two = zootriage.core.nnls.solve_batched(points, signs, targets, workers=2)
    assert sorted(seen) == [150, 150]
    assert bool(ok_one.all()) and bool(ok_two.all())
    assert torch.allclose(one, two, rtol=0, atol=1e-10)


def test_geometry_chunks_shared_among_threads_give_the_one_thread_answer(monkeypatch):
    """The geometry's chunks of draws on two threads: the same markers to the last bit (the chunk
    sums are added in chunk order), and the same as one big chunk to rounding."""
    x, y = relu_like(seed=5, n_classes=6, per_class=15, dim=40)
    feats, classes, p = glue_inputs(x, y)
    d = solve_draws(feats, classes, p, np.random.SeedSequence(3), 240, "none", "one_vs_rest", "fast", CPU)
    n_crit = float(d.n_of_t.mean())
    whole = effective_geometry(d.points, d.classes, p, d.t, d.lam, n_crit)
    monkeypatch.setattr(zootriage.core.glue_geometry, "_CHUNK_ELEMENTS", 6 * 40 * 7)  # 7 draws a chunk
    one = effective_geometry(d.points, d.classes, p, d.t, d.lam, n_crit, workers=1)
    two = effective_geometry(d.points, d.classes, p, d.t, d.lam, n_crit, workers=2)
    assert one == two
    for field, value in asdict(whole).items():
        assert getattr(one, field) == pytest.approx(value, rel=1e-12, abs=1e-15), field
