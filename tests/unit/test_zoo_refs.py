"""Model references: short strings and JSON into one discriminated union, bad ones rejected clearly."""

from __future__ import annotations

import pytest

from zootriage.core.errors import BadReference
from zootriage.core.zoo.refs import (
    CheckpointRef,
    TimmRef,
    TorchvisionRef,
    parse_model_ref,
    validate_model_ref,
)


def test_short_strings() -> None:
    v2 = TorchvisionRef(arch="resnet50", weights="IMAGENET1K_V2")
    assert parse_model_ref("tv:resnet50.IMAGENET1K_V2") == v2
    assert parse_model_ref("tv:resnet50") == TorchvisionRef(arch="resnet50", weights="DEFAULT")
    assert parse_model_ref("timm:resnet50.a1_in1k") == TimmRef(name="resnet50.a1_in1k")
    assert parse_model_ref("tv:resnet18@/up/w.safetensors") == CheckpointRef(
        path="/up/w.safetensors", library="torchvision", architecture="resnet18"
    )
    assert parse_model_ref("ckpt:/up/m.pt2") == CheckpointRef(path="/up/m.pt2")


def test_json_round_trip() -> None:
    ref = CheckpointRef(path="m.pt2", penultimate_node="relu_2", label_space="digits")
    assert parse_model_ref(ref.model_dump_json()) == ref
    assert validate_model_ref({"source": "timm", "name": "convnext_atto"}) == TimmRef(name="convnext_atto")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("resnet50", "expected tv:, timm: or ckpt:"),
        ("hf:bert", "unknown prefix 'hf'"),
        ("tv:resnet 50.V1", "arch"),
        ("ckpt:/up/weights.safetensors", "needs its architecture"),
        ('{"source": "onnx", "path": "m.onnx"}', "source"),
    ],
)
def test_bad_references(text: str, message: str) -> None:
    with pytest.raises(BadReference, match=message) as info:
        parse_model_ref(text)
    assert info.value.code == "bad_reference"
