"""compute_markers: applicability, label handling, validation, and the single GLUE call."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

import zootriage.core.markers.compute as compute_module
from zootriage.core.glue import GlueResult, analyze
from zootriage.core.glue_regime import Regime
from zootriage.core.glue_subsets import seeded_subsets
from zootriage.core.markers import MarkerValue, Protocol, compute_markers, list_markers
from zootriage.core.markers.representation import participation_ratio

GEOMETRY_FIELDS = [s.name for s in list_markers(group="geometry")]


def _glue(std=None, **overrides):
    values = {name: 0.1 * (i + 1) for i, name in enumerate(GEOMETRY_FIELDS)}
    values.update(overrides)
    return GlueResult(n_crit=5.0, n_crit_sem=0.1, n_classes=3, n_points=60, n_t=100, std=std, **values)


@pytest.fixture
def fake_analyze(monkeypatch):
    """Record every call of core.glue.analyze made by compute_markers and answer a fixed result."""
    calls = []
    result = {"glue": _glue()}

    def analyze(features, labels, **kwargs):
        calls.append((features, labels, kwargs))
        return result["glue"]

    monkeypatch.setattr(compute_module, "analyze", analyze)
    return calls, result


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    labels = np.repeat([3, 7, 9], 20)
    features = rng.standard_normal((60, 6)) + np.eye(6)[np.repeat([0, 1, 2], 20)] * 3
    logits = rng.standard_normal((60, 10))
    logits[np.arange(60), labels] += 2.0
    return features, labels, logits


def test_every_marker_is_reported(fake_analyze, data):
    features, labels, logits = data
    out = compute_markers(features, labels, logits)
    assert list(out) == [s.name for s in list_markers()]
    assert all(isinstance(v, MarkerValue) and v.applicable and math.isfinite(v.value) for v in out.values())


def test_one_analyze_call_with_the_protocol(fake_analyze, data):
    calls, _ = fake_analyze
    features, labels, logits = data
    protocol = Protocol(points_per_class=10, n_t=123, seed=5, centering="global", repeats=2)
    out = compute_markers(features, labels, logits, protocol=protocol, device="cpu")
    assert len(calls) == 1
    _, classes, kwargs = calls[0]
    assert kwargs == {
        "n_t": 123,
        "seed": 5,
        "centering": "global",
        "dichotomy": "one_vs_rest",
        "points_per_class": 10,
        "repeats": 2,
        "device": torch.device("cpu"),
        "cancel": None,
    }
    assert sorted(np.unique(classes)) == [0, 1, 2]  # labels mapped to class indices
    assert out["dimension"].value == pytest.approx(0.2) and out["center_norm"].value == pytest.approx(0.8)


def test_geometry_std_comes_from_the_repeats(fake_analyze, data):
    _, result = fake_analyze
    result["glue"] = _glue(std={name: 0.01 for name in [*GEOMETRY_FIELDS, "n_crit"]})
    out = compute_markers(*data[:2])
    assert all(out[name].std == 0.01 for name in GEOMETRY_FIELDS)
    assert out["nc1"].std is None


def test_infinite_glue_limits_are_reported_not_stored(fake_analyze, data):
    _, result = fake_analyze
    result["glue"] = _glue(radius=math.inf)
    out = compute_markers(*data[:2])
    assert not out["radius"].applicable and "radius = inf" in out["radius"].reason
    assert out["dimension"].applicable


def test_no_analyze_call_without_geometry_markers(fake_analyze, data):
    calls, _ = fake_analyze
    out = compute_markers(*data, names=["energy", "nc1"])
    assert list(out) == ["energy", "nc1"] and calls == []


def test_unknown_marker_names(data):
    with pytest.raises(ValueError, match="unknown marker 'accuracy'"):
        compute_markers(*data, names=["accuracy"])


def test_missing_logits_are_reported_not_dropped(fake_analyze, data):
    out = compute_markers(*data[:2])
    for spec in list_markers(group="logit"):
        assert not out[spec.name].applicable and "logits" in out[spec.name].reason
    assert out["participation_ratio"].applicable


def test_logits_of_another_label_space(fake_analyze):
    # An ImageNet-like 1000-way model scored on a dataset with string labels.
    rng = np.random.default_rng(1)
    labels = np.repeat(["cat", "dog", "eel"], 10)
    logits = rng.standard_normal((30, 1000))
    out = compute_markers(rng.standard_normal((30, 4)), labels, logits, logits_match_labels=False)
    for name in ("id_accuracy", "confidence_auroc", "logit_margin"):
        assert not out[name].applicable and "logits_match_labels=False" in out[name].reason
    for name in ("mean_confidence", "entropy", "energy", "nc1", "h_score"):
        assert out[name].applicable


def test_labels_are_logit_columns_for_logit_markers(data):
    features, labels, logits = data
    out = compute_markers(features, labels, logits, names=["id_accuracy"])
    assert out["id_accuracy"].value == pytest.approx(np.mean(logits.argmax(axis=1) == labels))


def test_representation_markers_see_class_codes(data):
    features, labels, _ = data
    out = compute_markers(features, labels.astype(str), names=["nc1", "participation_ratio"])
    remapped = compute_markers(features, np.searchsorted([3, 7, 9], labels), names=["nc1"])
    assert out["nc1"].value == pytest.approx(remapped["nc1"].value, rel=1e-12)
    assert out["participation_ratio"].value == pytest.approx(participation_ratio(features=features))


def test_torch_inputs_are_accepted(data):
    features, labels, logits = data
    out = compute_markers(
        torch.from_numpy(features), torch.from_numpy(labels), torch.from_numpy(logits), names=["energy"]
    )
    assert out["energy"].value == pytest.approx(compute_markers(*data, names=["energy"])["energy"].value)


def test_undefined_math_is_not_applicable_with_its_reason(data):
    features, labels, _ = data
    features = features.copy()
    features[0] = 0.0
    out = compute_markers(features, labels, names=["mean_angle", "mean_distance"])
    assert not out["mean_angle"].applicable and "zero norm" in out["mean_angle"].reason
    assert out["mean_distance"].applicable


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda f, y, z: (f[:, 0], y, z), "features must be a 2-D array"),
        (lambda f, y, z: (np.where(f > 2, np.nan, f), y, z), "NaN or inf"),
        (lambda f, y, z: (f, y[:-1], z), "labels must be 1-D with one entry per feature row"),
        (lambda f, y, z: (f, np.zeros_like(y), z), "at least 2 classes"),
        (lambda f, y, z: (f, np.r_[y[:-1], 5], z), "classes with one point: 5"),
        (lambda f, y, z: (f, y, z[:-1]), "logits have 59 rows"),
        (lambda f, y, z: (f, y, np.where(z > 2, np.inf, z)), "logits contain NaN or inf"),
        (lambda f, y, z: (f, y, z[:, :8]), r"out of range: \[9\]"),
        (lambda f, y, z: (f, y.astype(float), z), "integer column indices"),
        (lambda f, y, z: (f, y.astype(str), z), "integer column indices"),
        (lambda f, y, z: ([["a", "b"]] * 60, y, z), "features cannot be read"),
        (lambda f, y, z: (f, np.array([None, 1] * 30, dtype=object), None), "mutually comparable"),
    ],
)
def test_bad_inputs_raise_clear_errors(data, mutate, message):
    with pytest.raises(ValueError, match=message):
        compute_markers(*mutate(*data), names=["energy"])


def test_unavailable_device_is_an_error(data, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="CUDA is not available"):
        compute_markers(*data, device="cuda")


def test_degenerate_data_rejected_by_glue_leaves_the_other_markers(data):
    features, labels, logits = data
    out = compute_markers(np.zeros_like(features), labels, logits, protocol=Protocol(n_t=20), device="cpu")
    for name in GEOMETRY_FIELDS:
        assert not out[name].applicable and out[name].reason.startswith("GLUE analysis failed")
    assert out["energy"].applicable and out["numerical_rank"].value == 0


def test_protocol_must_be_a_protocol(data):
    with pytest.raises(ValueError, match=r"Protocol\.from_dict"):
        compute_markers(*data, protocol={"n_t": 10})


def test_real_glue_wiring():
    # GLUE itself is tested elsewhere; this checks that its result reaches the markers intact.
    rng = np.random.default_rng(2)
    labels = np.repeat(np.arange(3), 12)
    centres = rng.standard_normal((3, 10))
    features = centres[labels] + 0.3 * rng.standard_normal((36, 10))
    protocol = Protocol(points_per_class=10, n_t=100, seed=1, repeats=2)
    out = compute_markers(features, labels, protocol=protocol, names=GEOMETRY_FIELDS, device="cpu")
    direct = analyze(features, labels, n_t=100, seed=1, points_per_class=10, repeats=2, device="cpu")
    assert direct.noise is not None and direct.noise.kind == "overlapping"  # 12 points, 2 repeats of 10
    for name in GEOMETRY_FIELDS:
        assert out[name].value == pytest.approx(getattr(direct, name), rel=1e-9)
        assert out[name].std == pytest.approx(direct.decision_std[name], rel=1e-9, abs=1e-12)
        assert out[name].decidable and out[name].reason == direct.noise.reason


def test_explicit_cpu_equals_the_default_without_cuda(data, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the default then resolves to the CPU
    protocol = Protocol(n_t=50, points_per_class=10)
    default = compute_markers(*data, protocol=protocol)
    assert compute_markers(*data, protocol=protocol, device="cpu") == default
    assert all(value.applicable for value in default.values())


def _relu_data(n_per_class, dim, seed):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(5), n_per_class)
    features = np.maximum(rng.standard_normal((5, dim))[labels] + rng.standard_normal((labels.size, dim)), 0)
    logits = 2.0 * np.eye(5)[labels] + rng.standard_normal((labels.size, 5))
    return features, labels, logits


@pytest.mark.gpu
@pytest.mark.parametrize(("n_per_class", "dim"), [(60, 40), (6, 100)])  # tall and wide (n < N)
def test_cuda_matches_cpu(n_per_class, dim):
    # GLUE's own CUDA-vs-CPU check is in test_glue.py; here every other marker, to 1e-9.
    data = _relu_data(n_per_class, dim, seed=dim)
    names = [s.name for s in list_markers() if s.group != "geometry"]
    gpu = compute_markers(*data, device="cuda", names=names)
    cpu = compute_markers(*data, device="cpu", names=names)
    for name in names:
        assert gpu[name].applicable == cpu[name].applicable, name
        if cpu[name].applicable:
            assert gpu[name].value == pytest.approx(cpu[name].value, rel=1e-9, abs=1e-12), name


def test_markers_of_a_degenerate_regime_are_shown_but_not_decidable(fake_analyze, data):
    _, result = fake_analyze
    regime = Regime(0.5, 0.0, 60, 6, True, "50% of the drawn dichotomies are not linearly separable")
    result["glue"] = replace(_glue(), regime=regime)
    out = compute_markers(*data)
    for name in GEOMETRY_FIELDS:
        assert out[name].applicable and out[name].value is not None and not out[name].decidable
        assert out[name].reason.startswith("not decidable: degenerate GLUE regime: 50% of the drawn")
    assert out["nc1"].decidable and out["nc1"].std is None
    assert out["nc1"].reason.startswith("no noise estimate: draws-only noise")  # 20 points ≤ 50 per repeat
    result["glue"] = replace(_glue(), regime=replace(regime, degenerate=False, reason=None))
    assert all(v.decidable for v in compute_markers(*data).values())


def test_real_degenerate_regime_reaches_the_markers():
    rng = np.random.default_rng(5)
    labels = np.repeat(np.arange(4), 15)
    features = rng.standard_normal((60, 5))  # 60 points in 5-d, centred: one-vs-rest is not separable
    protocol = Protocol(points_per_class=None, n_t=50, centering="global", repeats=2)
    out = compute_markers(features, labels, protocol=protocol, names=["dimension"], device="cpu")
    assert not out["dimension"].decidable and "not linearly separable" in out["dimension"].reason


def test_a_marker_that_is_not_decidable_needs_a_reason():
    with pytest.raises(ValueError, match="not decidable"):
        MarkerValue(1.0, decidable=False)
    assert MarkerValue(1.0, reason="why", decidable=False).to_dict()["decidable"] is False


@pytest.mark.parametrize(("points", "repeats", "kind"), [(5, 4, "disjoint"), (8, 4, "overlapping")])
def test_markers_outside_glue_carry_their_spread_over_glues_subsets(data, points, repeats, kind):
    """The std of a marker outside GLUE is its sample std over the very per-class subsets of GLUE's
    repeats, times their inflation (``core.glue_subsets``), with the value on the whole sample."""
    features, labels, logits = data
    protocol = Protocol(points_per_class=points, repeats=repeats, seed=3, n_t=20)
    names = ["nc1", "id_accuracy", "participation_ratio"]
    out = compute_markers(features, labels, logits, protocol=protocol, names=names, device="cpu")
    classes = np.unique(labels, return_inverse=True)[1]
    subsets, noise = seeded_subsets(classes, points, repeats, 3)
    assert noise.kind == kind and len(subsets) == repeats
    direct = compute_markers(
        features, labels, logits, protocol=Protocol(repeats=1), names=names, device="cpu"
    )
    for name in names:
        per_subset = [
            compute_markers(
                features[k], labels[k], logits[k], protocol=Protocol(repeats=1), names=[name], device="cpu"
            )[name].value
            for k in subsets
        ]
        assert out[name].value == pytest.approx(direct[name].value, rel=1e-12)
        expected = np.std(per_subset, ddof=1) * noise.inflation
        assert expected > 0 and out[name].std == pytest.approx(expected, rel=1e-9)
        assert direct[name].std is None  # one repeat: no noise estimate


def test_glue_draws_the_same_subsets_as_the_other_markers(data, monkeypatch):
    """GLUE's repeats take their points from ``seeded_subsets`` under the protocol's seed: the very
    subsets the other markers' noise is measured on."""
    import zootriage.core.glue as glue_module

    drawn = []

    def recording(*args):
        drawn.append(seeded_subsets(*args))
        return drawn[-1]

    monkeypatch.setattr(glue_module, "seeded_subsets", recording)
    features, labels, _ = data
    analyze(features, labels, n_t=30, seed=7, points_per_class=5, repeats=4, device="cpu")
    classes = np.unique(labels, return_inverse=True)[1]
    subsets, noise = seeded_subsets(classes, 5, 4, 7)
    assert len(drawn) == 1 and noise.kind == "disjoint"
    assert all(np.array_equal(a, b) for a, b in zip(drawn[0][0], subsets, strict=True))
    parts = [set(k.tolist()) for k in subsets]
    assert all(not (a & b) for i, a in enumerate(parts) for b in parts[i + 1 :])
