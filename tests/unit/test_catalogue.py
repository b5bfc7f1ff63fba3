"""The published catalogues (``core.catalogue``) say what the installed libraries and the marker
registry say, so the API's answers from them are the worker's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torchvision

from zootriage.core.catalogue import markers as marker_catalogue
from zootriage.core.catalogue import publish
from zootriage.core.catalogue import timm as timm_catalogue
from zootriage.core.catalogue import torchvision as torchvision_catalogue
from zootriage.core.errors import UnknownModel
from zootriage.core.glue import MARKERS
from zootriage.core.markers import get_marker, list_markers
from zootriage.core.zoo import timm_zoo, torchvision_zoo
from zootriage.core.zoo.weight_caches import torch_hub_dir


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    """Each catalogue built once from the installed libraries (seconds each: every torchvision and timm
    model is listed and resolved)."""
    return {name: builder() for name, builder in publish.BUILDERS.items()}


@pytest.fixture
def builders(built: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """``publish``'s builders answer with the module's one build of each catalogue."""
    answers = {name: (lambda value=value: value) for name, value in built.items()}
    monkeypatch.setattr(publish, "BUILDERS", answers)


def test_the_published_files_match_the_installed_libraries(builders: None) -> None:
    assert publish.stale() == [], f"run {publish.COMMAND}"
    assert publish.main(["--check"]) == 0


def test_a_stale_file_is_named(builders: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("markers", "torchvision", "timm"):
        (tmp_path / f"{name}.json").write_text(publish.dumps(publish.BUILDERS[name]()), encoding="utf-8")
    (tmp_path / "markers.json").write_text('{"glue_markers": [], "markers": []}\n', encoding="utf-8")
    monkeypatch.setattr("zootriage.core.catalogue.files.HERE", tmp_path)
    assert publish.stale() == ["markers"]
    assert publish.main(["--check"]) == 1


def test_markers_as_the_registry_lists_them() -> None:
    assert [m.to_dict() for m in marker_catalogue.list_markers()] == [s.to_dict() for s in list_markers()]
    assert marker_catalogue.get_marker("radius").higher_is_better is get_marker("radius").higher_is_better
    assert marker_catalogue.glue_markers() == MARKERS
    with pytest.raises(ValueError, match="unknown marker 'nope'; known markers: "):
        marker_catalogue.get_marker("nope")


@pytest.mark.parametrize(
    ("arch", "weights"),
    [("resnet50", "DEFAULT"), ("resnet50", "IMAGENET1K_V1"), ("vit_b_16", "IMAGENET1K_SWAG_E2E_V1")],
)
def test_torchvision_weights_as_the_enum_resolves_them(arch: str, weights: str) -> None:
    member = torchvision_zoo.weights_enum(arch, weights)
    info = torchvision_catalogue.weights_info(arch, weights)
    assert info.name == member.name
    assert torch_hub_dir() / "checkpoints" / info.file == torchvision_zoo.cache_path(member)
    assert info.acc1 == torchvision_zoo.metadata(member)["acc1"]


@pytest.mark.parametrize(("arch", "weights"), [("resnet999", "DEFAULT"), ("resnet50", "NOPE")])
def test_unknown_torchvision_weights_are_refused_alike(arch: str, weights: str) -> None:
    with pytest.raises(UnknownModel) as by_library:
        torchvision_zoo.weights_enum(arch, weights)
    with pytest.raises(UnknownModel) as by_catalogue:
        torchvision_catalogue.weights_info(arch, weights)
    assert str(by_catalogue.value).split(" (")[0] == str(by_library.value).split(" (")[0]


def test_v1_v2_pairs_as_torchvision_lists_them() -> None:
    assert list(torchvision_catalogue.v1_v2_pairs()) == torchvision_zoo.v1_v2_pairs()
    assert torchvision_catalogue.has_architecture("fasterrcnn_resnet50_fpn")
    assert not torchvision_catalogue.has_architecture("resnet999")


@pytest.mark.parametrize(
    "name", ["resnet50", "resnet50.a1_in1k", "tv_resnet50", "davit_giant", "vit_base_patch16_224"]
)
def test_timm_names_made_canonical_as_timm_does(name: str) -> None:
    assert timm_catalogue.check_name(name) == timm_zoo.check_name(name)


@pytest.mark.parametrize("name", ["no_such_model", "resnet50.no_such_tag"])
def test_unknown_timm_names_are_refused_alike(name: str) -> None:
    with pytest.raises(UnknownModel) as by_library:
        timm_zoo.check_name(name)
    with pytest.raises(UnknownModel) as by_catalogue:
        timm_catalogue.check_name(name)
    assert str(by_catalogue.value).split(" (")[0] == str(by_library.value).split(" (")[0]


@pytest.mark.parametrize(
    ("torch_home", "xdg"), [(None, None), ("/srv/torch", None), (None, "/srv/cache"), ("~/t", "/srv/cache")]
)
def test_torch_hub_dir_is_torchs(
    torch_home: str | None, xdg: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable, value in (("TORCH_HOME", torch_home), ("XDG_CACHE_HOME", xdg)):
        if value is None:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, value)
    assert torch_hub_dir() == Path(torch.hub.get_dir())
    assert torchvision.__version__ == publish.torchvision_models()["version"]
