"""The GLUE engine against its mathematical identities, the published reference values and a
brute-force simulation (docs/method.md, "Checks the implementation passes")."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize
import torch

from zootriage.core.capacity_sim import simulated_capacity
from zootriage.core.examples import REFERENCE, REFERENCE_FIELDS, example, gaussian_manifolds, relu_like
from zootriage.core.glue import MARKERS, analyze, cone_points, glue_inputs, solve_draws
from zootriage.core.glue import _summarize as summarize
from zootriage.core.glue_geometry import anchor_coefficients, anchor_points
from zootriage.core.glue_regime import separable_fraction
from zootriage.core.glue_subsets import repeat_subsets

CPU = torch.device("cpu")


def draws(x, y, *, n_t=300, seed=0, centering="none", dichotomy="one_vs_rest", solver="fast"):
    feats, classes, p = glue_inputs(x, y)
    seq = np.random.SeedSequence(seed)
    return solve_draws(feats, classes, p, seq, n_t, centering, dichotomy, solver, CPU)


def small_relu():
    return relu_like(seed=3, n_classes=5, per_class=20, dim=64)


DATASETS = {
    "A": lambda: example("A"),
    "B": lambda: example("B"),
    "relu": small_relu,
    "wide": lambda: gaussian_manifolds(5, n_classes=3, per_class=10, dim=200, radius=1.5),
}


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("centering", ["none", "global"])
def test_kkt_n_of_t_is_projection_on_active_anchors(name, centering):
    """N(t) = (St)ᵀ(SSᵀ)⁺(St) over the active anchors S, draw by draw, computed here in numpy."""
    x, y = DATASETS[name]()
    d = draws(x, y, n_t=200, centering=centering)
    coeff, active = anchor_coefficients(d.lam, d.classes, d.n_classes)
    s_all = anchor_points(d.points, d.classes, d.n_classes, coeff).numpy()
    t = d.t.numpy()
    for k in range(t.shape[0]):
        s = s_all[k][active[k].numpy()]
        st = s @ t[k]
        proj = st @ np.linalg.pinv(s @ s.T, rcond=1e-12) @ st if s.size else 0.0
        assert d.n_of_t[k].item() == pytest.approx(proj, rel=1e-8, abs=1e-10)


def test_cone_points_are_the_dense_product_over_the_support():
    """A_kλ_k through λ's support (bags of points) equals the dense (σ ⊙ λ) X, draws with no
    support (λ = 0: the first, one in the middle and the last) included."""
    x, y = small_relu()
    d = draws(x, y, n_t=50)
    lam = d.lam.clone()
    lam[[0, 17, -1]] = 0.0
    dense = (d.signs * lam) @ d.points
    cone = cone_points(d.signs, lam, d.points)
    assert torch.allclose(cone, dense, rtol=0, atol=1e-12)
    assert not cone[[0, 17, -1]].any()
    assert torch.allclose(d.cone, (d.signs * d.lam) @ d.points, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_capacity_identity(name):
    x, y = DATASETS[name]()
    r = analyze(x, y, n_t=300, seed=1)
    assert r.dimension > 0
    assert r.capacity == pytest.approx(r.utilization * (1 + r.radius**-2) / r.dimension, rel=1e-9)
    assert r.n_crit == pytest.approx(r.n_classes / r.capacity, rel=1e-12)


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("centering", ["none", "global"])
@pytest.mark.parametrize("dichotomy", ["one_vs_rest", "random"])
def test_fast_solver_matches_reference(name, centering, dichotomy):
    """Same draws → the batched solver reproduces per-draw scipy NNLS: N(t), anchors and markers."""
    x, y = DATASETS[name]()
    fast = draws(x, y, n_t=150, centering=centering, dichotomy=dichotomy)
    ref = draws(x, y, n_t=150, centering=centering, dichotomy=dichotomy, solver="reference")
    assert fast.n_fallback == 0
    np.testing.assert_allclose(fast.n_of_t.numpy(), ref.n_of_t.numpy(), rtol=1e-6, atol=1e-12)
    cf, af = anchor_coefficients(fast.lam, fast.classes, fast.n_classes)
    cr, ar = anchor_coefficients(ref.lam, ref.classes, ref.n_classes)
    assert torch.equal(af, ar)
    sf = anchor_points(fast.points, fast.classes, fast.n_classes, cf).numpy()
    sr = anchor_points(ref.points, ref.classes, ref.n_classes, cr).numpy()
    np.testing.assert_allclose(sf, sr, rtol=1e-6, atol=1e-9)
    rf = analyze(x, y, n_t=150, centering=centering, dichotomy=dichotomy).to_dict()
    rr = analyze(x, y, n_t=150, centering=centering, dichotomy=dichotomy, solver="reference").to_dict()
    for m in MARKERS:
        assert rf[m] == pytest.approx(rr[m], rel=1e-6, abs=1e-12), m


def test_first_vs_rest_two_classes_matches_reference():
    x, y = gaussian_manifolds(2, n_classes=2, per_class=30, dim=40, radius=1.0)
    rf = analyze(x, y, n_t=200, dichotomy="first_vs_rest")
    rr = analyze(x, y, n_t=200, dichotomy="first_vs_rest", solver="reference")
    assert rf.n_crit == pytest.approx(rr.n_crit, rel=1e-6)
    assert rf.dimension == pytest.approx(rr.dimension, rel=1e-6)


@pytest.mark.parametrize(("name", "centering"), sorted(REFERENCE))
def test_published_reference_values(name, centering):
    """Examples A and B of docs/method.md, n_t = 2000, within max(4%, 3 Monte-Carlo standard errors).

    Both sides are Monte-Carlo estimates: ours is the mean over 4 seeds, the table's is one run of
    2000 draws, whose error we take from the spread of our single runs (and, for the markers that
    divide by N_crit, from the table's own ± on N_crit when that is larger).
    """
    x, y = example(name)
    runs = [analyze(x, y, n_t=2000, centering=centering, seed=s).to_dict() for s in range(4)]
    ref = dict(zip(REFERENCE_FIELDS, REFERENCE[(name, centering)], strict=True))
    rel_sem_table = ref["n_crit_sem"] / ref["n_crit"]
    for field in ("capacity", "n_crit", "dimension", "radius", "utilization", "center_alignment"):
        values = np.array([r[field] for r in runs])
        se_run = values.std(ddof=1)
        if field in ("capacity", "n_crit", "utilization"):
            se_run = max(se_run, rel_sem_table * abs(ref[field]))
        se_diff = math.sqrt(se_run**2 + se_run**2 / len(runs))
        tol = max(0.04 * abs(ref[field]), 3 * se_diff)
        assert abs(values.mean() - ref[field]) <= tol, (field, values.mean(), ref[field], tol)


@pytest.mark.parametrize(
    "name",
    ["A", "A-global", "relu", "wide"],
)
def test_capacity_agrees_with_simulation(name):
    """α from GLUE within 10% of α_sim, the brute-force LP separability simulation."""
    centering = "global" if name.endswith("global") else "none"
    x, y = DATASETS[name.split("-")[0]]()
    if centering == "global":
        x = x - x.mean(axis=0)
    alpha = analyze(x, y, n_t=1000, centering="none").capacity
    alpha_sim = simulated_capacity(x, y, trials=120, seed=7)
    assert alpha == pytest.approx(alpha_sim, rel=0.10)


def test_invariant_to_global_scale():
    x, y = small_relu()
    a = analyze(x, y, n_t=300).to_dict()
    b = analyze(x * 37.5, y, n_t=300).to_dict()
    for m in MARKERS:
        expected = a[m] * 37.5 if m == "center_norm" else a[m]
        assert b[m] == pytest.approx(expected, rel=1e-9), m


@pytest.mark.parametrize("wide", [False, True])
def test_invariant_to_rotation(wide):
    """A random rotation of feature space changes only which draws are taken: Monte-Carlo error."""
    x, y = gaussian_manifolds(4, n_classes=4, per_class=20, dim=120 if wide else 30, radius=0.8)
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((x.shape[1], x.shape[1])))
    a = analyze(x, y, n_t=2000)
    b = analyze(x @ q, y, n_t=2000)
    tol = 4 * math.hypot(a.n_crit_sem, b.n_crit_sem)
    assert abs(a.n_crit - b.n_crit) <= tol
    for m in ("dimension", "radius", "utilization", "center_alignment"):
        assert getattr(b, m) == pytest.approx(getattr(a, m), rel=0.05), m
    assert b.center_norm == pytest.approx(a.center_norm, rel=0.05)


def test_deterministic_for_seed_and_thread_count():
    x, y = small_relu()
    a = analyze(x, y, n_t=200, seed=11)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        b = analyze(x, y, n_t=200, seed=11)
    finally:
        torch.set_num_threads(threads)
    c = analyze(x, y, n_t=200, seed=12)
    for m in MARKERS:
        assert getattr(b, m) == pytest.approx(getattr(a, m), rel=1e-9), m
    assert c.n_crit != a.n_crit


def test_accepts_torch_tensors_and_any_label_values():
    x, y = small_relu()
    names = np.array(["cat", "dog", "emu", "fox", "gnu"])[y]
    a = analyze(x, y, n_t=100)
    b = analyze(torch.from_numpy(x), names, n_t=100)
    assert b.n_crit == pytest.approx(a.n_crit, rel=1e-12)
    c = analyze(torch.from_numpy(x).float(), y, n_t=100)  # float32 in, float64 inside
    assert c.n_crit == pytest.approx(a.n_crit, rel=1e-5)
    assert (b.n_classes, b.n_points, b.n_t) == (5, 100, 100)


def test_points_per_class_and_repeats():
    x, y = relu_like(seed=1, n_classes=4, per_class=40, dim=32)
    one = analyze(x, y, n_t=200, points_per_class=10)
    assert one.n_points == 40 and one.std is None and one.repeats == 1
    rep = analyze(x, y, n_t=200, points_per_class=10, repeats=3)
    assert rep.repeats == 3 and rep.std is not None
    assert set(rep.std) == set(MARKERS)
    assert all(v > 0 for k, v in rep.std.items() if k != "center_norm")


def test_subsample_changes_with_seed_but_not_when_class_is_small():
    x, y = relu_like(seed=1, n_classes=3, per_class=12, dim=16)
    full = analyze(x, y, n_t=100, seed=4)
    capped = analyze(x, y, n_t=100, seed=4, points_per_class=12)
    assert capped.n_crit == pytest.approx(full.n_crit, rel=1e-12)


def test_degenerate_classes_give_finite_results():
    x, y = small_relu()
    x = x.copy()
    x[y == 0] = x[y == 0][0]  # a zero-variance class
    x = np.concatenate([x, x[:15]])  # duplicated points
    y = np.concatenate([y, y[:15]])
    r = analyze(x, y, n_t=200)
    fast = r.to_dict()
    assert all(math.isfinite(fast[m]) for m in MARKERS)
    ref = analyze(x, y, n_t=200, solver="reference")
    assert r.n_crit == pytest.approx(ref.n_crit, rel=1e-6)


def test_all_point_manifolds_have_zero_dimension():
    x = np.repeat(np.eye(4, 10), 5, axis=0)
    y = np.repeat(np.arange(4), 5)
    r = analyze(x, y, n_t=100)
    assert r.dimension == 0 and r.radius == 0 and r.utilization == 0
    assert math.isfinite(r.capacity) and r.capacity > 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"features": np.ones((4, 3)), "labels": np.zeros(4)}, "at least 2 classes"),
        ({"features": np.ones((5, 3)), "labels": np.array([0, 0, 1, 1, 2])}, "one point: 2"),
        ({"features": np.array([[np.nan, 1], [1, 2], [0, 1], [3, 3]]), "labels": [0, 0, 1, 1]}, "NaN or inf"),
        ({"features": np.array([[np.inf, 1], [1, 2], [0, 1], [3, 3]]), "labels": [0, 0, 1, 1]}, "NaN or inf"),
        ({"features": np.ones((4, 3)), "labels": np.array([0, 0, 1])}, r"one entry per feature row \(4\)"),
        ({"features": np.zeros((0, 3)), "labels": np.zeros(0)}, "features are empty"),
        ({"features": np.ones(6), "labels": np.zeros(6)}, "2-D"),
        ({"features": np.ones((4, 2)), "labels": np.zeros((4, 1))}, "labels must be 1-D"),
        ({"features": np.zeros((4, 3)), "labels": [0, 0, 1, 1]}, "all features are zero"),
    ],
)
def test_bad_input_raises_clear_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        analyze(kwargs["features"], kwargs["labels"], n_t=10)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"n_t": 0}, "n_t must be a positive integer"),
        ({"n_t": 2.5}, "n_t must be a positive integer"),
        ({"centering": "local"}, "centering must be one of"),
        ({"dichotomy": "all"}, "dichotomy must be one of"),
        ({"points_per_class": 1}, "points_per_class"),
        ({"repeats": 0}, "repeats"),
        ({"solver": "magic"}, "solver"),
    ],
)
def test_bad_options_raise(option, message):
    x, y = small_relu()
    with pytest.raises(ValueError, match=message):
        analyze(x, y, **option)


def test_cuda_request_without_cuda_is_an_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA; the error path is for machines without it")
    x, y = small_relu()
    with pytest.raises(ValueError, match="CUDA is not available"):
        analyze(x, y, n_t=10, device="cuda")


@pytest.mark.gpu
def test_cuda_matches_cpu():
    x, y = relu_like(seed=2, n_classes=6, per_class=30, dim=128)
    gpu = analyze(x, y, n_t=500, device="cuda")
    cpu = analyze(x, y, n_t=500, device="cpu")
    for m in MARKERS:
        assert getattr(gpu, m) == pytest.approx(getattr(cpu, m), rel=1e-6), m


@pytest.mark.parametrize("name", ["A", "relu"])
def test_capacity_over_repeats_is_p_over_mean_n_crit_and_the_identity_is_exact(name):
    x, y = DATASETS[name]()
    combined = analyze(x, y, n_t=150, seed=2, repeats=4, points_per_class=15)
    feats, classes, p = glue_inputs(x, y)
    partition, *children = np.random.SeedSequence(2).spawn(5)
    subsets, _ = repeat_subsets(classes, 15, 4, np.random.default_rng(partition))
    runs = [
        summarize(solve_draws(feats[k], classes[k], p, child, 150, "none", "one_vs_rest", "fast", CPU))
        for k, child in zip(subsets, children, strict=True)
    ]
    mean_n_crit = np.mean([r.n_crit for r in runs])
    assert combined.n_crit == pytest.approx(mean_n_crit, rel=1e-12)
    assert combined.capacity == pytest.approx(p / mean_n_crit, rel=1e-12)
    assert combined.capacity != pytest.approx(np.mean([r.capacity for r in runs]), rel=1e-9)
    assert combined.dimension == pytest.approx(np.mean([r.dimension for r in runs]), rel=1e-12)
    identity = combined.utilization * (1 + combined.radius**-2) / combined.dimension
    assert combined.capacity == pytest.approx(identity, rel=1e-12)
    assert combined.std is not None and combined.std["capacity"] > 0


def lp_separable(x, y):
    """Independent of core.capacity_sim: maximise the margin s of y_i<w, x_i> >= s over the box
    |w_j| <= 1 (s <= 1); strictly separable through the origin iff the optimum s > 0."""
    n, d = x.shape
    cost = np.zeros(d + 1)
    cost[-1] = -1.0
    a_ub = np.hstack([-(y[:, None] * x), np.ones((n, 1))])
    res = scipy.optimize.linprog(
        cost, A_ub=a_ub, b_ub=np.zeros(n), bounds=[(-1, 1)] * d + [(None, 1)], method="highs-ipm"
    )
    return res.status == 0 and -res.fun > 1e-9


def regime_cases():
    rng = np.random.default_rng(7)
    return {
        "n < N": (rng.standard_normal((10 * 5, 64)), np.repeat(np.arange(10), 5)),
        "n > N": (rng.standard_normal((10 * 50, 64)), np.repeat(np.arange(10), 50)),
    }


@pytest.mark.parametrize("case", ["n < N", "n > N"])
def test_regime_on_both_sides_of_the_boundary_agrees_with_an_independent_lp(case):
    x, y = regime_cases()[case]
    r = analyze(x, y, n_t=200, centering="global")
    xc = x - x.mean(axis=0)
    expected = np.mean([lp_separable(xc, np.where(y == c, 1.0, -1.0)) for c in range(10)])
    assert r.regime.separable_fraction == pytest.approx(expected, abs=0.15)  # drawn, not all P equally
    assert (r.regime.n_points, r.regime.rank) == (x.shape[0], min(x.shape))
    if case == "n < N":
        assert expected == 1.0 and not r.degenerate and r.regime.reason is None
        assert r.regime.saturated_fraction < 0.5
    else:
        assert expected == 0.0 and r.degenerate
        assert r.regime.separable_fraction == 0.0 and r.regime.saturated_fraction == 1.0
        assert "not linearly separable" in r.regime.reason
        assert r.capacity == pytest.approx(10 / 64, rel=0.1)  # stuck at P / r


def test_separable_fraction_weights_each_dichotomy_by_its_draws():
    points = np.array([[1.0], [2.0], [-1.0], [-3.0]])  # class 0 right of the origin, class 1 left
    classes = np.array([0, 0, 1, 1])
    drawn = np.array([[1.0, -1.0], [1.0, -1.0], [1.0, -1.0], [-1.0, -1.0]])  # the last is not separable
    assert separable_fraction(points, classes, drawn) == 0.75


def test_degenerate_repeats_flag_the_combined_result():
    x, y = regime_cases()["n > N"]
    r = analyze(x, y, n_t=100, centering="global", repeats=2, points_per_class=40)
    assert r.degenerate and "(in 2 of 2 repeats)" in r.regime.reason
