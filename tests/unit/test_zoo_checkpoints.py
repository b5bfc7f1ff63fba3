"""Uploaded checkpoints: real trained weights as torch.export programs, and every way a file is bad."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from tests.conftest import SITE, LeNet5, export_program
from zootriage.core.data.fitting import FittedImages
from zootriage.core.data.open import open_dataset
from zootriage.core.data.refs import BuiltinRef, Sampling
from zootriage.core.data.sampling import sample
from zootriage.core.errors import (
    BadCheckpoint,
    CheckpointKeyMismatch,
    CheckpointNeedsCode,
    NotACheckpoint,
    PenultimateNotFound,
    TruncatedCheckpoint,
)
from zootriage.core.features import extract
from zootriage.core.zoo.loader import load_model
from zootriage.core.zoo.refs import CheckpointRef, parse_model_ref
from zootriage.core.zoo.weights import read_state_dict, sha256_file

PUBLISHED = {"ccexam": 0.9905, "clntrained": 0.9890, "advtrained": 0.9864}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PUBLISHED))
def test_mnist_accuracy_matches_published(digit_programs: dict[str, Path], name: str) -> None:
    model = load_model(parse_model_ref(f"ckpt:{digit_programs[name]}"))
    images = open_dataset(BuiltinRef(name="mnist"), "test")
    chosen = sample(images, Sampling(per_class=None))
    out = extract(model.module, FittedImages(images, chosen.indices, model.preprocess), model.preprocess,
                  batch_size=500)
    assert len(out.labels) == 10_000
    accuracy = float((out.logits.argmax(1) == out.labels).mean())
    assert abs(accuracy - PUBLISHED[name]) <= 0.003
    assert out.features.shape[1] == (128 if name == "ccexam" else 200)


def test_exported_penultimate_equals_hand_forward(digit_programs: dict[str, Path]) -> None:
    lenet = LeNet5()
    lenet.load_state_dict(read_state_dict(SITE / "advertorch_examples" / "trained_models" /
                                          "mnist_lenet5_clntrained.pt"))
    images = open_dataset(BuiltinRef(name="mnist"), "test")
    x = torch.from_numpy(images.loader(0)[None, None].astype(np.float32) / 255)
    x = torch.cat([x, torch.from_numpy(images.loader(1)[None, None].astype(np.float32) / 255)])
    with torch.inference_mode():
        h = torch.nn.functional.max_pool2d(torch.relu(lenet.conv1(x)), 2)
        h = torch.nn.functional.max_pool2d(torch.relu(lenet.conv2(h)), 2)
        expected = torch.relu(lenet.linear1(h.flatten(1)))
        pen, logits = load_model(parse_model_ref(f"ckpt:{digit_programs['clntrained']}")).module(x)
        expected_logits = lenet.linear2(expected)
    torch.testing.assert_close(pen, expected)
    torch.testing.assert_close(logits, expected_logits)


def test_named_node_and_static_batch(tmp_path: Path) -> None:
    torch.manual_seed(0)
    lenet = LeNet5().eval()
    program = torch.export.export(lenet, (torch.zeros(3, 1, 28, 28),))  # static batch of 3
    torch.export.save(program, tmp_path / "static.pt2")
    ref = CheckpointRef(path=str(tmp_path / "static.pt2"), penultimate_node="linear")
    model = load_model(ref)
    x = torch.rand(7, 1, 28, 28)
    with torch.inference_mode():
        pen, logits = model.module(x)
        torch.testing.assert_close(pen, lenet.linear1(_lenet_flat(lenet, x)))  # before the ReLU
        torch.testing.assert_close(logits, lenet(x))
    assert model.preprocess.mean == (0.0,) and model.preprocess.crop == (28, 28)  # inferred from the input
    with pytest.raises(PenultimateNotFound, match="no node named 'nope'"):
        load_model(ref.model_copy(update={"penultimate_node": "nope"}))


def _lenet_flat(lenet: LeNet5, x: torch.Tensor) -> torch.Tensor:
    h = torch.nn.functional.max_pool2d(torch.relu(lenet.conv1(x)), 2)
    return torch.nn.functional.max_pool2d(torch.relu(lenet.conv2(h)), 2).flatten(1)


def test_same_weights_two_files_one_identity(tmp_path: Path) -> None:
    source = SITE / "advertorch_examples" / "trained_models" / "mnist_lenet5_clntrained.pt"
    copy = tmp_path / "upload.pt"
    copy.write_bytes(source.read_bytes())
    assert sha256_file(copy) == sha256_file(source)
    wrapped = tmp_path / "wrapped.pt"
    torch.save({"state_dict": {f"module.{k}": v for k, v in read_state_dict(source).items()}}, wrapped)
    assert read_state_dict(wrapped).keys() == read_state_dict(source).keys()


def test_pickle_that_needs_code_is_refused(tmp_path: Path) -> None:
    torch.save(LeNet5(), tmp_path / "whole_model.pt")  # pickles the class, not just tensors
    with pytest.raises(CheckpointNeedsCode, match="needs code"):
        read_state_dict(tmp_path / "whole_model.pt")


def test_files_that_are_not_checkpoints(tmp_path: Path) -> None:
    (tmp_path / "notes.pt").write_text("these are not weights")
    (tmp_path / "random.safetensors").write_bytes(np.random.default_rng(0).bytes(4096))
    (tmp_path / "list.pt").write_bytes(b"")
    torch.save([torch.zeros(2)], tmp_path / "list.pt")
    (tmp_path / "image.pt2").write_bytes((SITE / "ccexam" / "samples" / "usps_digit_1.png").read_bytes())
    for name, pattern in [("notes.pt", "neither a torch zip"), ("random.safetensors", "not a safetensors"),
                          ("list.pt", "not a state_dict"), ("image.pt2", "not a zip")]:
        with pytest.raises(NotACheckpoint, match=pattern):
            if name.endswith(".pt2"):
                load_model(CheckpointRef(path=str(tmp_path / name)))
            else:
                read_state_dict(tmp_path / name)


def test_truncated_files(tmp_path: Path, digit_programs: dict[str, Path]) -> None:
    state = read_state_dict(SITE / "advertorch_examples" / "trained_models" / "mnist_lenet5_clntrained.pt")
    save_file(state, tmp_path / "full.safetensors")
    torch.save(state, tmp_path / "full.pt")
    for name, data in [("full.safetensors", (tmp_path / "full.safetensors").read_bytes()),
                       ("full.pt", (tmp_path / "full.pt").read_bytes()),
                       ("full.pt2", digit_programs["ccexam"].read_bytes())]:
        cut = tmp_path / f"cut_{name}"
        cut.write_bytes(data[: len(data) // 2])
        with pytest.raises(TruncatedCheckpoint):
            if name.endswith(".pt2"):
                load_model(CheckpointRef(path=str(cut)))
            else:
                read_state_dict(cut)


def test_keys_that_do_not_match_the_architecture(tmp_path: Path) -> None:
    state = read_state_dict(SITE / "advertorch_examples" / "trained_models" / "mnist_lenet5_clntrained.pt")
    save_file(state, tmp_path / "lenet.safetensors")
    with pytest.raises(CheckpointKeyMismatch, match=r"no classifier weight fc\.weight"):
        load_model(parse_model_ref(f"tv:resnet18@{tmp_path / 'lenet.safetensors'}"))
    torch.manual_seed(0)
    resnet = __import__("torchvision").models.resnet18(num_classes=10).state_dict()
    del resnet["layer1.0.conv1.weight"]
    resnet["extra.weight"] = torch.zeros(1)
    save_file(resnet, tmp_path / "partial.safetensors")
    mismatch = r"missing keys: layer1\.0\.conv1\.weight.*unexpected keys: extra\.weight"
    with pytest.raises(CheckpointKeyMismatch, match=mismatch):
        load_model(parse_model_ref(f"tv:resnet18@{tmp_path / 'partial.safetensors'}"))


def test_program_metadata_travels_with_the_file(tmp_path: Path) -> None:
    path = export_program(LeNet5(), tmp_path / "m.pt2", {"channels": 1, "crop": [28, 28], "resize": None,
                                                         "mean": [0.5], "std": [0.25]}, "digits")
    model = load_model(CheckpointRef(path=str(path)))
    assert model.preprocess.mean == (0.5,) and model.info.label_space == "digits"
    assert model.info.num_classes == 10 and model.info.penultimate == "relu_2"
    wrong = export_program(LeNet5(), tmp_path / "w.pt2", {"channels": 3, "crop": [28, 28]}, None)
    with pytest.raises(BadCheckpoint, match="its preprocessing gives"):
        load_model(CheckpointRef(path=str(wrong)))
    wrong = export_program(LeNet5(), tmp_path / "w.pt2", {"channels": 1, "crop": [28, 28]}, None)
    # 3 ImageNet means for 1 channel: refused by the metadata's one model, naming the file and the field
    with pytest.raises(BadCheckpoint, match=r"w\.pt2: its zootriage\.json is not usable \(preprocess"):
        load_model(CheckpointRef(path=str(wrong)))


class _Payload:
    """Unpickling this creates a folder: the stand-in for code a crafted upload would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.makedirs, (str(self.marker),)


def test_program_with_a_code_pickle_is_refused_without_running_it(
    digit_programs: dict[str, Path], tmp_path: Path
) -> None:
    """torch.export.load falls back to weights_only=False for its sample inputs; we never let it."""
    marker = tmp_path / "ran"
    payload = io.BytesIO()
    torch.save(_Payload(marker), payload)
    crafted = tmp_path / "crafted.pt2"
    with zipfile.ZipFile(digit_programs["ccexam"]) as source, zipfile.ZipFile(crafted, "w") as target:
        for info in source.infolist():
            swap = info.filename.endswith("data/sample_inputs/model.pt")
            target.writestr(info, payload.getvalue() if swap else source.read(info))
    with pytest.raises(CheckpointNeedsCode, match=r"imports os\.makedirs"):
        load_model(CheckpointRef(path=str(crafted)))
    assert not marker.exists()
