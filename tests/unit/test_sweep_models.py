"""A sweep's models from a list, the v1/v2 preset or a timm filter: named only, bounded, never empty."""

from __future__ import annotations

import pytest
import timm

from zootriage.core.errors import BadReference
from zootriage.core.zoo import v1_v2_pairs
from zootriage.core.zoo.refs import TimmRef, TorchvisionRef
from zootriage.core.zoo.sweep_models import NoModels, TooManyModels, listed, timm_filter, v1_v2_preset


def test_v1v2_preset_is_every_pair_v1_then_v2() -> None:
    pairs = sorted(pair.arch for pair in v1_v2_pairs())
    refs = v1_v2_preset(64)
    assert len(pairs) == 24 and len(refs) == 48
    assert refs[:2] == [
        TorchvisionRef(arch=pairs[0], weights="IMAGENET1K_V1"),
        TorchvisionRef(arch=pairs[0], weights="IMAGENET1K_V2"),
    ]
    assert {(r.arch, r.weights) for r in refs if isinstance(r, TorchvisionRef)} == {
        (arch, w) for arch in pairs for w in ("IMAGENET1K_V1", "IMAGENET1K_V2")
    }
    assert "resnet50" in pairs and "resnet18" not in pairs  # resnet18 has only V1


def test_v1v2_preset_over_the_bound_is_refused() -> None:
    with pytest.raises(TooManyModels, match="48 models; a sweep scores at most 47"):
        v1_v2_preset(47)


def test_timm_filter_names_the_registry_matches_without_downloading() -> None:
    refs = timm_filter("resnet50.*", 64)
    expected = timm.list_pretrained("resnet50.*")
    assert [r.name for r in refs if isinstance(r, TimmRef)] == expected
    assert len(refs) == len(expected) > 1 and all(r.name.startswith("resnet50.") for r in refs)


def test_timm_filter_bounds() -> None:
    with pytest.raises(NoModels, match="names no model") as none:
        timm_filter("no_such_architecture_xyz.*", 64)
    assert none.value.code == "no_models" and none.value.http_status == 422
    with pytest.raises(TooManyModels, match=r"matches \d+ pretrained models") as many:
        timm_filter("*", 64)
    assert many.value.code == "too_many_models"
    exact = len(timm.list_pretrained("resnet50.*"))
    assert len(timm_filter("resnet50.*", exact)) == exact
    with pytest.raises(TooManyModels):
        timm_filter("resnet50.*", exact - 1)


@pytest.mark.parametrize("pattern", ["", "resnet50;rm", "a" * 101, "../x", "res net"])
def test_timm_filter_outside_its_alphabet_is_a_bad_reference(pattern: str) -> None:
    with pytest.raises(BadReference):
        timm_filter(pattern, 64)


def test_listed_bounds() -> None:
    refs = [TimmRef(name=f"resnet{d}") for d in (18, 34, 50)]
    assert listed(refs, 3) == refs
    with pytest.raises(TooManyModels, match="3 models; a sweep scores at most 2"):
        listed(refs, 2)
    with pytest.raises(NoModels):
        listed([], 2)
