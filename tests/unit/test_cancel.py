"""A cancel check reaches every long loop of the marker stage: GLUE's repeats and the solver's steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import zootriage.core.nnls
from zootriage.core.errors import Cancelled
from zootriage.core.glue import analyze
from zootriage.core.markers import Protocol, compute_markers
from zootriage.core.nnls import solve_batched
from zootriage.core.protocol import REPEATS_MAX


class CancelAfter:
    """Answers no ``calls`` times, then yes; counts how often it was asked."""

    def __init__(self, calls: int) -> None:
        self.left = calls
        self.asked = 0

    def __call__(self) -> bool:
        self.asked += 1
        self.left -= 1
        return self.left < 0


def clusters(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(3), 12)
    return rng.standard_normal((36, 8)) + 3 * np.eye(8)[labels], labels


def test_glue_stops_between_repeats() -> None:
    features, labels = clusters()
    check = CancelAfter(5)
    with pytest.raises(Cancelled):
        analyze(features, labels, n_t=20, repeats=10**6, device="cpu", cancel=check)
    assert check.asked == 6  # stopped at the first yes, long before the millionth repeat


def test_the_solver_stops_between_its_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Lawson–Hanson step of every block asks (here in blocks of four draws)."""
    features, _ = clusters()
    monkeypatch.setattr(zootriage.core.nnls, "_BATCH_ELEMENTS", 36 * 4)
    points = torch.from_numpy(features / np.linalg.norm(features, axis=1, keepdims=True))
    signs = torch.from_numpy(np.where(np.random.default_rng(1).random((40, 36)) < 0.5, 1.0, -1.0))
    t = torch.from_numpy(np.random.default_rng(2).standard_normal((40, 8)))
    counting = CancelAfter(10**9)
    solve_batched(points, signs, t, cancel=counting, workers=1)
    assert counting.asked > 10  # ten blocks, several steps each
    check = CancelAfter(counting.asked // 2)
    with pytest.raises(Cancelled):
        solve_batched(points, signs, t, cancel=check, workers=1)
    assert check.asked == counting.asked // 2 + 1
    shared = CancelAfter(counting.asked // 2)  # blocks shared among threads stop as well
    with pytest.raises(Cancelled):
        solve_batched(points, signs, t, cancel=shared, workers=2)
    assert shared.asked < counting.asked
    lam, ok = solve_batched(points, signs, t, cancel=lambda: False)  # a check that says no changes nothing
    expected, expected_ok = solve_batched(points, signs, t)
    assert torch.equal(lam, expected) and torch.equal(ok, expected_ok)


def test_compute_markers_passes_the_check_down() -> None:
    features, labels = clusters()
    longest = Protocol(n_t=20, repeats=REPEATS_MAX)  # finishes, and raises nothing, if the check is lost
    with pytest.raises(Cancelled):
        compute_markers(features, labels, protocol=longest, device="cpu", cancel=CancelAfter(2))
    done = compute_markers(features, labels, protocol=Protocol(n_t=20), device="cpu", cancel=lambda: False)
    assert done["capacity"].applicable
