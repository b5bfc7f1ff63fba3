"""The batched NNLS solver's two routes (Gram and primal, core.nnls._Cloud) against per-draw scipy
NNLS, and the primal route's memory: linear in the number of points, never the n × n Gram."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from functools import cache

import numpy as np
import pytest
import torch

from zootriage.core.examples import example, gaussian_manifolds, relu_like
from zootriage.core.glue import MARKERS, glue_inputs, solve_draws
from zootriage.core.glue import _summarize as summarize
from zootriage.core.glue_geometry import anchor_coefficients, anchor_points
from zootriage.core.nnls import _entering, solve_batched

CPU = torch.device("cpu")
DATASETS = {
    "A": lambda: example("A"),
    "B": lambda: example("B"),
    "relu": lambda: relu_like(seed=3, n_classes=5, per_class=20, dim=64),
    "wide": lambda: gaussian_manifolds(5, n_classes=3, per_class=10, dim=200, radius=1.5),
    # n = 160 points in r = 24 dimensions: many more points than the rank.
    "many": lambda: relu_like(seed=4, n_classes=8, per_class=20, dim=24),
}


@cache
def reference_draws(name, centering, dichotomy):
    feats, classes, p = glue_inputs(*DATASETS[name]())
    seed = np.random.SeedSequence(5)
    return solve_draws(feats, classes, p, seed, 120, centering, dichotomy, "reference", CPU)


@pytest.mark.parametrize("route", ["gram", "primal"])
@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("centering", ["none", "global"])
@pytest.mark.parametrize("dichotomy", ["one_vs_rest", "random"])
def test_route_matches_reference(route, name, centering, dichotomy):
    """Same draws: N(t), active sets, anchors and every marker equal the reference to 1e-6."""
    ref = reference_draws(name, centering, dichotomy)
    lam, ok = solve_batched(ref.points, ref.signs, ref.t, route=route)
    assert bool(ok.all())
    n_of_t = ((ref.signs * lam) @ ref.points).square().sum(dim=1)
    np.testing.assert_allclose(n_of_t.numpy(), ref.n_of_t.numpy(), rtol=1e-6, atol=1e-12)
    cf, af = anchor_coefficients(lam, ref.classes, ref.n_classes)
    cr, ar = anchor_coefficients(ref.lam, ref.classes, ref.n_classes)
    assert torch.equal(af, ar)
    sf = anchor_points(ref.points, ref.classes, ref.n_classes, cf).numpy()
    sr = anchor_points(ref.points, ref.classes, ref.n_classes, cr).numpy()
    np.testing.assert_allclose(sf, sr, rtol=1e-6, atol=1e-9)
    fast = summarize(replace(ref, lam=lam, n_of_t=n_of_t)).to_dict()
    slow = summarize(ref).to_dict()
    for m in MARKERS:
        assert fast[m] == pytest.approx(slow[m], rel=1e-6, abs=1e-12), m


# P = 200 classes × M = 50 points in N = 256: n = 10,000 points, r = 256.
_P, _M, _N, _N_T = 200, 50, 256, 4
_MEMORY_SCRIPT = f"""
import json, resource
import numpy as np, torch
from zootriage.core.examples import relu_like
from zootriage.core.glue import _summarize, solve_draws, glue_inputs

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

feats, classes, p = glue_inputs(*relu_like(seed=0, n_classes={_P}, per_class={_M}, dim={_N}))
cpu = torch.device("cpu")
args = (np.random.SeedSequence(0), {_N_T}, "none", "one_vs_rest", "fast", cpu)
solve_draws(feats[:200], classes[:200], 4, *args)  # warm up: libraries loaded, pools made
before = peak()
d = solve_draws(feats, classes, p, *args)
solved = peak()
result = _summarize(d)  # N(t), the regime check and the geometry
print(json.dumps({{"before": before, "solved": solved, "after": peak(), "fallback": d.n_fallback,
                   "positive": bool((d.n_of_t > 0).all()), "n_crit": result.n_crit}}))
"""


def test_primal_route_memory_stays_below_one_gram():
    """Analysing P=200 × M=50 × N=256 must not hold the n × n Gram matrix: its float64 copy alone is
    n²·8 B = 800 MB, while the primal route needs the cloud (n·r·8 = 20 MB), a few dense (B, n)
    arrays (B = n_t = 4 here: 0.3 MB each) and the (B, |S|, r) passive blocks (|S| ≤ r: 2 MB).
    The bound, a quarter of the Gram, leaves room for allocator slack and still fails on any O(n²)
    array. The rest of the analysis (the regime check's certificates, the geometry over each draw's
    active manifolds) stays under the same bound: the LP it replaces took 290 MB here."""
    n = _P * _M
    bound = n * n * 8 // 4
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["fallback"] == 0
    assert figures["positive"]
    assert figures["solved"] - figures["before"] < bound, figures
    assert figures["after"] - figures["before"] < bound, figures
    assert figures["n_crit"] > 0


def test_the_entering_index_is_the_first_largest_outside_the_passive_set():
    """``_entering`` (numpy's argmax on the CPU) against a brute-force scan, ties included: draw 0
    holds index 4 (w = 5) in its passive set, so 1 wins over the equal 2; draw 1 has an empty set
    (every slot at the dummy 5); random draws have no ties and must agree with torch's max."""
    w = torch.tensor([[1.0, 3.0, 3.0, 0.0, 5.0, 0.0], [0.0, -1.0, 2.0, 2.0, 0.0, 0.0]], dtype=torch.float64)
    idx = torch.tensor([[4, 5], [5, 5]])
    values, enter = _entering(w.clone(), idx)
    assert enter.tolist() == [1, 2] and values.tolist() == [3.0, 2.0]
    rng = np.random.default_rng(0)
    w = torch.from_numpy(rng.standard_normal((50, 31)))
    idx = torch.from_numpy(rng.integers(0, 31, size=(50, 4)))
    values, enter = _entering(w.clone(), idx)
    expected = w.scatter(1, idx, -torch.inf).max(dim=1)
    assert torch.equal(enter, expected.indices) and torch.equal(values, expected.values)
