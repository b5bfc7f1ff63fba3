"""Static model checks (what the API runs at submit): names resolved, caches looked up, nothing built."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torchvision

from zootriage.core.errors import UnknownModel, WeightsNotAvailable
from zootriage.core.zoo.checks import canonical_model
from zootriage.core.zoo.refs import CheckpointRef, TimmRef, TorchvisionRef


def test_torchvision_default_resolves_to_its_member_when_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(WeightsNotAvailable, match="not in the local torch hub cache"):
        canonical_model(TorchvisionRef(arch="resnet18"))
    weights = torchvision.models.ResNet18_Weights.DEFAULT
    cached = tmp_path / "hub" / "checkpoints" / os.path.basename(weights.url)
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"only its presence is checked")
    assert canonical_model(TorchvisionRef(arch="resnet18")) == TorchvisionRef(
        arch="resnet18", weights=weights.name
    )
    with pytest.raises(UnknownModel):
        canonical_model(TorchvisionRef(arch="resnet18", weights="NOPE"))


def test_timm_tag_made_explicit_and_never_downloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    def no_download(*args: object, **kwargs: object) -> None:
        raise AssertionError("a static check downloaded weights")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # even online, the check only reads caches
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_download)
    with pytest.raises(WeightsNotAvailable, match=r"resnet18\.a1_in1k"):
        canonical_model(TimmRef(name="resnet18"))
    with pytest.raises(UnknownModel):
        canonical_model(TimmRef(name="no_such_model"))


def test_checkpoint_architectures_are_checked_by_name() -> None:
    ref = CheckpointRef(path="a.pt", library="torchvision", architecture="resnet18")
    assert canonical_model(ref) == ref
    with pytest.raises(UnknownModel):
        canonical_model(CheckpointRef(path="a.pt", library="torchvision", architecture="resnet999"))
    with pytest.raises(UnknownModel):
        canonical_model(CheckpointRef(path="a.pt", library="timm", architecture="no_such_model"))
