"""The points of each GLUE repeat: disjoint, seeded and balanced when the sample allows it, labelled
overlapping or draws-only (with the finite-population bound) when it does not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zootriage.core.examples import relu_like
from zootriage.core.glue import analyze
from zootriage.core.glue_subsets import repeat_subsets
from zootriage.core.markers import Protocol, compute_markers


def labels(sizes: list[int]) -> np.ndarray:
    """Class indices with ``sizes[c]`` points of class c, interleaved so that positions say nothing."""
    y = np.concatenate([np.full(n, c) for c, n in enumerate(sizes)])
    return np.random.default_rng(99).permutation(y)


def test_disjoint_partition_is_disjoint_seeded_and_balanced() -> None:
    y = labels([40, 35, 50])
    subsets, noise = repeat_subsets(y, 7, 5, np.random.default_rng(3))
    assert noise.kind == "disjoint" and noise.inflation == 1.0 and noise.reason is None
    assert len(subsets) == 5
    for keep in subsets:
        assert np.bincount(y[keep], minlength=3).tolist() == [7, 7, 7]
    everything = np.concatenate(subsets)
    assert np.unique(everything).size == everything.size == 5 * 21
    again, _ = repeat_subsets(y, 7, 5, np.random.default_rng(3))
    other, _ = repeat_subsets(y, 7, 5, np.random.default_rng(4))
    assert all(np.array_equal(a, b) for a, b in zip(subsets, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(subsets, other, strict=True))


def test_short_classes_give_overlapping_repeats_with_the_finite_population_bound() -> None:
    y = labels([40, 20, 50])  # class 1 has 20 < 5 × 7 points: its repeats must share some
    subsets, noise = repeat_subsets(y, 7, 5, np.random.default_rng(3))
    assert noise.kind == "overlapping" and noise.reason is not None and "overlapping" in noise.reason
    f = 7 / 20
    assert noise.fraction == pytest.approx(f)
    assert noise.inflation == pytest.approx(math.sqrt(5 * f / (1 - f))) and noise.inflation > 1
    short = [set(keep[y[keep] == 1].tolist()) for keep in subsets]
    assert all(len(s) == 7 for s in short)
    assert len(set.union(*short)) < 5 * 7  # they overlap
    assert len({frozenset(s) for s in short}) > 1  # but are not all the same points
    long = np.concatenate([keep[y[keep] == 0] for keep in subsets])
    assert np.unique(long).size == long.size  # a class with enough points stays disjoint


@pytest.mark.parametrize("points_per_class", [20, 30, None])
def test_classes_no_larger_than_a_repeat_are_draws_only(points_per_class: int | None) -> None:
    y = labels([20, 20])
    subsets, noise = repeat_subsets(y, points_per_class, 3, np.random.default_rng(0))
    assert noise.kind == "draws-only" and noise.inflation is None and "lower bound" in (noise.reason or "")
    assert all(np.array_equal(np.sort(keep), np.arange(40)) for keep in subsets)


def test_analyze_labels_its_noise_and_compute_markers_acts_on_it() -> None:
    x, y = relu_like(seed=1, n_classes=3, per_class=30, dim=24)
    disjoint = analyze(x, y, n_t=80, points_per_class=10, repeats=3)
    overlapping = analyze(x, y, n_t=80, points_per_class=12, repeats=3)
    assert disjoint.noise is not None and disjoint.noise.kind == "disjoint"
    assert disjoint.decision_std == disjoint.std
    assert overlapping.noise is not None and overlapping.noise.kind == "overlapping"
    assert overlapping.std is not None and overlapping.decision_std is not None
    factor = overlapping.noise.inflation
    assert factor is not None
    assert overlapping.decision_std["dimension"] == pytest.approx(overlapping.std["dimension"] * factor)

    geometry = ["dimension", "utilization"]
    short = compute_markers(x, y, protocol=Protocol(points_per_class=30, n_t=80, repeats=3), names=geometry)
    assert all(not v.decidable and "draws-only" in (v.reason or "") for v in short.values())
    partial = compute_markers(x, y, protocol=Protocol(points_per_class=12, n_t=80, repeats=3), names=geometry)
    assert all(v.decidable and "overlapping" in (v.reason or "") for v in partial.values())
    assert partial["dimension"].std == pytest.approx(overlapping.decision_std["dimension"])
    full = compute_markers(x, y, protocol=Protocol(points_per_class=10, n_t=80, repeats=3), names=geometry)
    assert all(v.decidable and v.reason is None for v in full.values())
