"""The fixed-cost work on GLUE (issue 26: shared thread pool, fewer small steps per solver step) must
not move any marker: the values below were computed by the code before that change, on fixed seeds
in float64, and every marker must agree to 1e-12 (relative)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zootriage.core.examples import relu_like
from zootriage.core.glue import MARKERS, analyze, preprocess, preprocess_with_gram
from zootriage.core.nnls import solve_batched

# (data, options, expected markers + regime fractions), from the previous implementation.
_CASES = [
    (
        (0, 10, 50, 512),
        {"n_t": 400},
        {
            "capacity": 0.3037755181067188,
            "n_crit": 32.9190451631027,
            "dimension": 8.58247860604195,
            "radius": 0.6425961411515452,
            "utilization": 0.7619406449078509,
            "center_alignment": 0.688644011004292,
            "axis_alignment": 0.035516701046499816,
            "center_axis_alignment": 0.035345292748343714,
            "center_norm": 17.023775626018566,
            "sep": 1.0,
            "sat": 0.0,
        },
    ),
    (
        (0, 10, 50, 512),
        {"n_t": 120, "centering": "global", "dichotomy": "random", "seed": 3},
        {
            "capacity": 0.12211832581203433,
            "n_crit": 81.88779148014274,
            "dimension": 14.304483022073052,
            "radius": 0.8816118525915997,
            "utilization": 0.763944664234623,
            "center_alignment": 0.11009002306460343,
            "axis_alignment": 0.034448049483624774,
            "center_axis_alignment": 0.037572111019952774,
            "center_norm": 8.99963669282098,
            "sep": 1.0,
            "sat": 0.0,
        },
    ),
    (
        (0, 10, 50, 512),
        {"n_t": 60, "points_per_class": 20, "repeats": 2, "seed": 5},
        {
            "capacity": 0.43424760713269867,
            "n_crit": 23.028336450784796,
            "dimension": 5.217083883366789,
            "radius": 0.669154308723221,
            "utilization": 0.7006788221740399,
            "center_alignment": 0.6653250380758732,
            "axis_alignment": 0.03545122054077034,
            "center_axis_alignment": 0.03603826739316502,
            "center_norm": 17.34278658613107,
            "sep": 1.0,
            "sat": 0.0,
        },
    ),
    (
        # More points than dimensions, centred: every cone collapses (the non-separability certificate).
        (1, 6, 30, 48),
        {"n_t": 80, "centering": "global"},
        {
            "capacity": 0.12104430637188163,
            "n_crit": 49.56862639673723,
            "dimension": 2.4207970558679346,
            "radius": 1.1166255232460054,
            "utilization": 0.16260851179012226,
            "center_alignment": 0.20930236186894013,
            "axis_alignment": 0.12018171319000578,
            "center_axis_alignment": 0.14783904818674956,
            "center_norm": 2.652109068171723,
            "sep": 0.0,
            "sat": 1.0,
        },
    ),
]


@pytest.mark.parametrize(("data", "options", "expected"), _CASES)
def test_markers_unchanged_to_1e_12(data, options, expected):
    seed, n_classes, per_class, dim = data
    x, y = relu_like(seed=seed, n_classes=n_classes, per_class=per_class, dim=dim)
    result = analyze(x, y, device="cpu", **options)
    for m in MARKERS:
        assert getattr(result, m) == pytest.approx(expected[m], rel=1e-12, abs=1e-15), m
    assert result.regime is not None
    assert result.regime.separable_fraction == expected["sep"]
    assert result.regime.saturated_fraction == expected["sat"]


@pytest.mark.parametrize("centering", ["none", "global"])
def test_gram_beside_the_qr_is_the_gram_of_the_rotated_points(centering):
    """``preprocess_with_gram`` (the QR and K = XXᵀ on two threads) returns exactly ``preprocess``'s
    points and scale, and K equal to the rotated points' own product to rounding: K is invariant
    under the rotation (XQ)(XQ)ᵀ = XXᵀ, divided by the scale squared."""
    x, _ = relu_like(seed=2, n_classes=6, per_class=20, dim=300)
    points, scale = preprocess(x, centering)
    points2, scale2, gram = preprocess_with_gram(x, centering, workers=2)
    assert np.array_equal(points, points2) and scale == scale2
    expected = torch.from_numpy(points) @ torch.from_numpy(points).T
    assert gram.shape == (120, 120)
    assert torch.allclose(gram, expected, rtol=0, atol=1e-13 * float(expected.abs().max()))


def test_solver_with_a_given_gram_gives_the_solver_forming_its_own():
    """``solve_batched(..., gram=K)`` takes K instead of forming it: the same solutions (to the
    rounding of K) and KKT checks as without."""
    x, y = relu_like(seed=2, n_classes=6, per_class=20, dim=300)
    points, _, gram = preprocess_with_gram(x, "none", workers=2)
    rng = np.random.default_rng(0)
    classes = np.asarray(y)
    dich = np.where(rng.random((64, 6)) < 0.5, 1, -1)
    signs = torch.from_numpy((-dich).astype(np.int8)[:, classes])
    pts, t = torch.from_numpy(points), torch.from_numpy(rng.standard_normal((64, points.shape[1])))
    own, ok_own = solve_batched(pts, signs, t, workers=1)
    given, ok_given = solve_batched(pts, signs, t, workers=1, gram=gram)
    assert bool(ok_own.all()) and bool(ok_given.all())
    assert torch.allclose(own, given, rtol=0, atol=1e-10)


def test_markers_with_the_gram_beside_the_qr_equal_the_serial_ones(monkeypatch):
    """Two threads take the overlapped path (K beside the QR, ``core.glue.preprocess_with_gram``),
    one thread the serial one; every marker agrees to 1e-12."""
    import zootriage.core.glue as glue

    calls: list[int] = []
    overlap = glue.preprocess_with_gram

    def spy(*args, **kwargs):
        calls.append(1)
        return overlap(*args, **kwargs)

    monkeypatch.setattr(glue, "preprocess_with_gram", spy)
    x, y = relu_like(seed=0, n_classes=10, per_class=50, dim=512)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        serial = analyze(x, y, device="cpu", n_t=200)
        assert not calls
        torch.set_num_threads(2)
        overlapped = analyze(x, y, device="cpu", n_t=200)
        assert calls == [1]
    finally:
        torch.set_num_threads(before)
    for m in MARKERS:
        assert getattr(overlapped, m) == pytest.approx(getattr(serial, m), rel=1e-12, abs=1e-15), m


@pytest.mark.parametrize("centering", ["none", "global"])
def test_two_threads_give_the_draws_and_regime_of_one(centering):
    """With two threads the Gaussian draws are made beside the QR, the cone points A_kλ_k are summed
    in one piece per thread and the regime check runs beside the geometry's chunks: the points and
    draws are those of one thread to the last bit, the cone points the one-piece sums of the same
    solutions to the last bit, the solutions agree to K's rounding (K is formed beside the QR) and
    the regime and markers are the same."""
    import zootriage.core.glue as glue

    x, y = relu_like(seed=1, n_classes=8, per_class=30, dim=300)
    feats, classes, p = glue.glue_inputs(x, y)
    cpu = torch.device("cpu")
    one, two = (
        glue.solve_draws(
            feats,
            classes,
            p,
            np.random.SeedSequence(4),
            150,
            centering,
            "one_vs_rest",
            "fast",
            cpu,
            workers=w,
        )
        for w in (1, 2)
    )
    assert torch.equal(one.points, two.points) and torch.equal(one.t, two.t)
    assert np.array_equal(one.dichotomies, two.dichotomies)
    assert torch.equal(two.cone, glue.cone_points(two.signs, two.lam, two.points))
    assert torch.allclose(one.lam, two.lam, rtol=0, atol=1e-10)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        serial = analyze(x, y, device="cpu", n_t=150, centering=centering)
        torch.set_num_threads(2)
        threaded = analyze(x, y, device="cpu", n_t=150, centering=centering)
    finally:
        torch.set_num_threads(before)
    assert serial.regime == threaded.regime
    for m in MARKERS:
        assert getattr(threaded, m) == pytest.approx(getattr(serial, m), rel=1e-12, abs=1e-15), m
