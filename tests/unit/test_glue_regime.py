"""The regime check's certificates (core.glue_regime.certify) against the LP they replace."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zootriage.core.capacity_sim import separable
from zootriage.core.examples import example, relu_like
from zootriage.core.glue import glue_inputs, solve_draws
from zootriage.core.glue_regime import certify, separable_fraction
from zootriage.core.nnls import solve_batched


def cases():
    rng = np.random.default_rng(7)
    return {
        "relu": relu_like(seed=2, n_classes=6, per_class=12, dim=96),
        "A": example("A"),
        "n < N": (rng.standard_normal((50, 64)), np.repeat(np.arange(10), 5)),
        "n ≈ N": (rng.standard_normal((80, 64)), np.repeat(np.arange(10), 8)),
        "n > N": (rng.standard_normal((300, 24)), np.repeat(np.arange(6), 50)),
    }


@pytest.mark.parametrize("name", sorted(cases()))
@pytest.mark.parametrize("centering", ["none", "global"])
@pytest.mark.parametrize("dichotomy", ["one_vs_rest", "random"])
def test_every_certificate_agrees_with_the_lp(name, centering, dichotomy):
    x, y = cases()[name]
    feats, classes, p = glue_inputs(x, y)
    d = solve_draws(
        feats, classes, p, np.random.SeedSequence(1), 60, centering, dichotomy, "fast", torch.device("cpu")
    )
    points, t = d.points.numpy(), d.t.numpy()
    v = (d.t - (d.signs * d.lam) @ d.points).numpy()
    distinct, inverse = np.unique(d.dichotomies, axis=0, return_inverse=True)
    verdicts = certify(points, classes, distinct, inverse.reshape(-1), t, v)
    decided = [(j, b) for j, b in enumerate(verdicts) if b is not None]
    assert len(decided) >= len(verdicts) - 1  # the LP is the exception, not the rule
    for j, verdict in decided:
        assert verdict == separable(points, distinct[j][classes])
    assert separable_fraction(points, classes, d.dichotomies, t, v) == separable_fraction(
        points, classes, d.dichotomies
    )


def test_both_kinds_of_certificate_occur():
    """A separable and a collapsed (every draw saturated) dichotomy are each decided without the LP."""
    rng = np.random.default_rng(0)
    classes = np.repeat(np.arange(2), 20)
    points = rng.standard_normal((40, 3)) + np.where(classes == 0, 10.0, -10.0)[:, None] * np.eye(3)[0]
    labels = np.array([[1.0, 1.0]] * 5 + [[1.0, -1.0]] * 5)  # same sign: collapsed; opposite: separable
    t = rng.standard_normal((10, 3))
    signs = -labels[:, classes]
    lam, ok = solve_batched(torch.from_numpy(points), torch.from_numpy(signs), torch.from_numpy(t))
    assert bool(ok.all())
    v = t - (signs * lam.numpy()) @ points
    distinct, inverse = np.unique(labels, axis=0, return_inverse=True)
    verdicts = certify(points, classes, distinct, inverse.reshape(-1), t, v)
    assert verdicts == [separable(points, y[classes]) for y in distinct] == [True, False]
