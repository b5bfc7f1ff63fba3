"""The whole suite on degenerate data: every marker is finite or not applicable with a reason."""

import math

import numpy as np
import pytest

from zootriage.core.markers import Protocol, compute_markers, list_markers

RNG = np.random.default_rng(0)
TWO = np.repeat([0, 1], 10)


def _tied_logits():
    z = np.zeros((20, 3))
    z[::2, 1] = 1.0  # half the rows tie between columns 0 and 2 as runner-up, the rest tie everywhere
    return z


CASES = {
    "two classes": (RNG.standard_normal((20, 5)) + 2 * TWO[:, None], TWO, RNG.standard_normal((20, 2))),
    "one feature": (RNG.standard_normal((20, 1)) + TWO[:, None], TWO, RNG.standard_normal((20, 2))),
    "constant features": (np.full((20, 5), 0.3), TWO, RNG.standard_normal((20, 2))),
    "all-zero features": (np.zeros((20, 4)), TWO, RNG.standard_normal((20, 2))),
    "duplicate rows": (np.repeat(RNG.standard_normal((10, 5)), 2, axis=0), TWO, RNG.standard_normal((20, 2))),
    "logits with ties": (RNG.standard_normal((20, 4)), np.tile([0, 1], 10), _tied_logits()),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_marker_is_finite_or_explained(case):
    features, labels, logits = CASES[case]
    out = compute_markers(
        features, labels, logits, protocol=Protocol(n_t=50, points_per_class=10), device="cpu"
    )
    assert list(out) == [s.name for s in list_markers()]
    for name, value in out.items():
        if value.applicable:
            assert value.value is not None and math.isfinite(value.value), (case, name)
        else:
            assert value.value is None and value.reason, (case, name)


def test_expected_values_on_degenerate_data():
    out = compute_markers(
        *CASES["constant features"], names=["participation_ratio", "numerical_rank", "h_score"]
    )
    assert "zero variance" in out["participation_ratio"].reason
    assert out["numerical_rank"].value == 0 and out["h_score"].value == 0
    out = compute_markers(*CASES["one feature"], names=["mean_abs_covariance", "participation_ratio"])
    assert "2 features" in out["mean_abs_covariance"].reason and out[
        "participation_ratio"
    ].value == pytest.approx(1)
    out = compute_markers(*CASES["all-zero features"], names=["mean_angle", "activation_density"])
    assert "zero norm" in out["mean_angle"].reason and out["activation_density"].value == 0
    out = compute_markers(*CASES["duplicate rows"], names=["within_class_distance"])
    assert out["within_class_distance"].value > 0
    features, labels, logits = CASES["logits with ties"]
    out = compute_markers(features, labels, logits, names=["id_accuracy", "logit_margin", "entropy"])
    # Rows 0, 2, ...: label 0, top logit column 1 (margin −1). Rows 1, 3, ...: all tie, label 1, argmax 0.
    assert out["id_accuracy"].value == 0.0
    assert out["logit_margin"].value == pytest.approx(-0.5)
    assert math.isfinite(out["entropy"].value)
