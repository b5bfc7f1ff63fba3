"""Protocol: defaults, validation, and the dict round trip stored with every run."""

import json

import pytest
from pydantic import ValidationError

from zootriage.core.markers import Protocol
from zootriage.core.protocol import DEFAULT_REPEATS


def test_defaults_are_the_papers_protocol():
    p = Protocol()
    assert p.to_dict() == {
        "points_per_class": 50,
        "n_t": 1000,
        "seed": 0,
        "centering": "none",
        "dichotomy": "one_vs_rest",
        "repeats": DEFAULT_REPEATS,
    }


def test_round_trip_through_json():
    p = Protocol(
        points_per_class=None, n_t=200, seed=7, centering="global", dichotomy="first_vs_rest", repeats=3
    )
    assert Protocol.from_dict(json.loads(json.dumps(p.to_dict()))) == p


def test_missing_keys_take_defaults():
    assert Protocol.from_dict({"seed": 3}) == Protocol(seed=3)


def test_unknown_keys_are_named():
    with pytest.raises(ValueError, match=r"\['colour', 'n_tt'\]"):
        Protocol.from_dict({"n_tt": 5, "colour": "red", "seed": 1})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("points_per_class", 1),
        ("points_per_class", 2.5),
        ("n_t", 0),
        ("n_t", "100"),
        ("n_t", True),
        ("seed", -1),
        ("repeats", 0),
        ("centering", "local"),
        ("dichotomy", "all_vs_all"),
    ],
)
def test_bad_values_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        Protocol.from_dict({field: value})


def test_from_dict_rejects_non_mappings():
    with pytest.raises(ValueError, match="dict"):
        Protocol.from_dict([("seed", 1)])  # type: ignore[arg-type]


def test_protocol_is_frozen_and_hashable():
    p = Protocol()
    with pytest.raises(ValidationError, match="frozen"):
        p.seed = 1  # type: ignore[misc]
    assert len({Protocol(), Protocol(), Protocol(seed=1)}) == 2
