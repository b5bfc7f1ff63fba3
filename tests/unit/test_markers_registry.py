"""The registry: every marker the issue lists, with its metadata, and the decorator's checks."""

import pytest

from zootriage.core.markers import MarkerValue, get_marker, list_markers, register_marker
from zootriage.core.markers import registry as registry_module

GEOMETRY = [
    "capacity",
    "dimension",
    "radius",
    "utilization",
    "center_alignment",
    "axis_alignment",
    "center_axis_alignment",
    "center_norm",
]
REPRESENTATION = [
    "participation_ratio",
    "nc1",
    "numerical_rank",
    "activation_density",
    "mean_abs_covariance",
    "mean_distance",
    "mean_angle",
    "within_class_distance",
    "within_class_angle",
    "rankme",
    "alpha_req",
]
LOGIT = ["id_accuracy", "confidence_auroc", "mean_confidence", "entropy", "logit_margin", "energy", "atc"]
TRANSFERABILITY = ["logme", "h_score", "ncti"]


def test_every_marker_is_registered_grouped_in_order():
    assert [s.name for s in list_markers()] == GEOMETRY + REPRESENTATION + LOGIT + TRANSFERABILITY
    assert [s.name for s in list_markers(group="logit")] == LOGIT


def test_specs_carry_metadata_and_math():
    for spec in list_markers():
        assert spec.description and spec.version >= 1
        assert spec.needs <= {"features", "labels", "logits"} and spec.needs
        assert spec.fn.__doc__ and any(ch in spec.fn.__doc__ for ch in "=Σ"), spec.name
    assert get_marker("logit_margin").needs == {"logits", "labels"}
    assert get_marker("energy").needs == {"logits"}
    assert get_marker("nc1").needs == {"features", "labels"}
    assert get_marker("dimension").higher_is_better is True
    assert get_marker("utilization").higher_is_better is True
    assert get_marker("radius").higher_is_better is None
    assert get_marker("logme").higher_is_better is True
    assert get_marker("rankme").higher_is_better is True and get_marker("rankme").needs == {"features"}
    assert get_marker("alpha_req").higher_is_better is None
    assert get_marker("ncti").higher_is_better is True and get_marker("ncti").needs == {"features", "labels"}
    assert get_marker("atc").higher_is_better is True and get_marker("atc").needs == {"logits", "labels"}


def test_spec_metadata_serialises():
    assert get_marker("logit_margin").to_dict() == {
        "name": "logit_margin",
        "group": "logit",
        "needs": ["labels", "logits"],
        "higher_is_better": None,
        "description": get_marker("logit_margin").description,
        "version": 1,
    }


def test_glob_filter():
    assert [s.name for s in list_markers("*angle*")] == ["mean_angle", "within_class_angle"]
    assert list_markers("nothing*") == []


def test_unknown_names_and_groups():
    with pytest.raises(ValueError, match="unknown marker 'nope'"):
        get_marker("nope")
    with pytest.raises(ValueError, match="group"):
        list_markers(group="vibes")


@pytest.fixture
def scratch_registry(monkeypatch):
    monkeypatch.setattr(registry_module, "_REGISTRY", dict(registry_module._REGISTRY))


def test_register_marker_adds_a_spec(scratch_registry):
    @register_marker(needs=("features",), higher_is_better=None, description="d", group="representation")
    def double_count(*, features):
        """2n."""
        return 2.0 * features.shape[0]

    spec = get_marker("double_count")
    assert spec.fn is double_count and spec.version == 1 and spec.group == "representation"
    assert list_markers("double_count") == [spec]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "nc1"}, "already registered"),
        ({"needs": ("pixels",)}, "needs"),
        ({"needs": ()}, "needs"),
        ({"group": "vibes"}, "group"),
        ({"version": 0}, "version"),
    ],
)
def test_register_marker_rejects_bad_specs(scratch_registry, kwargs, message):
    options = {"needs": ("features",), "higher_is_better": None, "description": "d", "group": "logit"}
    options.update(kwargs)
    with pytest.raises(ValueError, match=message):
        register_marker(**options)(lambda **_: 0.0)


def test_marker_value_invariants():
    assert MarkerValue(1.5, std=0.1).to_dict() == {
        "value": 1.5,
        "std": 0.1,
        "applicable": True,
        "reason": None,
        "decidable": True,
    }
    na = MarkerValue.not_applicable("no logits")
    assert (na.value, na.applicable, na.reason) == (None, False, "no logits")
    with pytest.raises(ValueError, match="finite"):
        MarkerValue(float("nan"))
    with pytest.raises(ValueError, match="finite"):
        MarkerValue(None)
    with pytest.raises(ValueError, match="std"):
        MarkerValue(1.0, std=-1.0)
    with pytest.raises(ValueError, match="reason"):
        MarkerValue(None, applicable=False)
