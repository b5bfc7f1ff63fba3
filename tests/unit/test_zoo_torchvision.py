"""torchvision weights through the weights API, offline: the cache file is the one loaded."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
import torchvision
from safetensors.torch import save_file
from torchvision.transforms.functional import to_pil_image

from zootriage.core.data.builtin import open_builtin
from zootriage.core.data.fitting import fit
from zootriage.core.errors import UnknownModel, WeightsNotAvailable
from zootriage.core.zoo.loader import load_model
from zootriage.core.zoo.refs import parse_model_ref
from zootriage.core.zoo.torchvision_zoo import v1_v2_pairs
from zootriage.core.zoo.weights import sha256_file


@pytest.fixture
def torch_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    return tmp_path / "hub" / "checkpoints"


def _place_weights(folder: Path, arch: str, weights: str, seed: int) -> tuple[Path, torch.nn.Module]:
    """A seeded random-init state_dict saved under the enum's expected file name."""
    enum = torchvision.models.get_model_weights(arch)[weights]
    torch.manual_seed(seed)
    model = torchvision.models.get_model(arch, num_classes=1000).eval()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / Path(enum.url).name
    torch.save(model.state_dict(), path)
    return path, model


def test_v1_v2_listing() -> None:
    pairs = {p.arch: p for p in v1_v2_pairs()}
    assert len(pairs) == 24
    assert (pairs["resnet50"].v1_acc1, pairs["resnet50"].v2_acc1) == (76.13, 80.858)
    assert {"resnet101", "wide_resnet50_2", "mobilenet_v3_large", "efficientnet_b1"} <= set(pairs)
    assert all(p.v2_acc1 > p.v1_acc1 for p in pairs.values())


def test_cached_file_is_loaded_without_network(torch_home: Path) -> None:
    path, reference = _place_weights(torch_home, "resnet18", "IMAGENET1K_V1", seed=7)
    model = load_model(parse_model_ref("tv:resnet18.IMAGENET1K_V1"))
    assert model.weights_sha256 == sha256_file(path)
    inner = model.module.model  # type: ignore[union-attr]
    torch.testing.assert_close(inner.conv1.weight, reference.conv1.weight)
    assert model.info.acc1 == 69.758 and model.info.num_params == 11_689_512
    assert model.info.label_space == "imagenet-1k" and model.info.penultimate == "input of fc"
    same_file = load_model(parse_model_ref(f"tv:resnet18@{path}"))  # the same weights, reached as an upload
    assert same_file.weights_sha256 == model.weights_sha256


def test_penultimate_equals_hand_forward_on_real_images(torch_home: Path) -> None:
    _, reference = _place_weights(torch_home, "resnet50", "IMAGENET1K_V2", seed=3)
    model = load_model(parse_model_ref("tv:resnet50.IMAGENET1K_V2"))
    assert model.preprocess.resize == 232 and model.preprocess.crop == (224, 224)  # V2 evaluates at 232
    images = open_builtin("foolbox-imagenet", None)
    pixels = torch.stack([fit(images.loader(i), model.preprocess) for i in range(3)])
    mean = torch.tensor(model.preprocess.mean).view(1, 3, 1, 1)
    std = torch.tensor(model.preprocess.std).view(1, 3, 1, 1)
    x = (pixels.float() / 255 - mean) / std
    expected_input = torchvision.models.get_weight("ResNet50_Weights.IMAGENET1K_V2").transforms()(
        to_pil_image(images.loader(0))  # torchvision's reference path, on a PIL image
    )
    one_level = 1.01 / 255 / min(model.preprocess.std)  # tensor vs PIL resampling: one uint8 step
    assert (x[0] - expected_input).abs().max() <= one_level
    with torch.inference_mode():
        r = reference
        h = r.maxpool(r.relu(r.bn1(r.conv1(x))))
        h = r.layer4(r.layer3(r.layer2(r.layer1(h))))
        expected = torch.flatten(r.avgpool(h), 1)
        pen, logits = model.module(x)
        expected_logits = r.fc(expected)
    torch.testing.assert_close(pen, expected)
    torch.testing.assert_close(logits, expected_logits)


def test_missing_weights_fail_fast(torch_home: Path) -> None:
    start = time.perf_counter()
    with pytest.raises(WeightsNotAvailable, match="IMAGENET1K_V2"):
        load_model(parse_model_ref("tv:mobilenet_v2.IMAGENET1K_V2"))
    assert time.perf_counter() - start < 60  # a generous bound: offline, the failure takes ~0.2 s


def test_unknown_names() -> None:
    with pytest.raises(UnknownModel, match="no architecture 'resnet19'"):
        load_model(parse_model_ref("tv:resnet19.IMAGENET1K_V1"))
    with pytest.raises(UnknownModel, match="has no weights 'IMAGENET1K_V3'"):
        load_model(parse_model_ref("tv:resnet18.IMAGENET1K_V3"))


@pytest.mark.parametrize(("arch", "classes"), [("regnet_y_400mf", 5), ("mobilenet_v3_large", 3)])
def test_state_dict_with_its_own_class_count(tmp_path: Path, arch: str, classes: int) -> None:
    torch.manual_seed(1)
    reference = torchvision.models.get_model(arch, num_classes=classes).eval()
    save_file(reference.state_dict(), tmp_path / "w.safetensors")
    model = load_model(parse_model_ref(f"tv:{arch}@{tmp_path / 'w.safetensors'}"))
    assert model.info.num_classes == classes and model.info.label_space is None
    x = torch.rand(2, 3, 224, 224)
    with torch.inference_mode():
        torch.testing.assert_close(model.module(x)[1], reference(x))


def test_torchvision_is_imported_only_where_a_model_or_dataset_needs_it(tmp_path: Path) -> None:
    """The worker's own process, the scoring code and a torchvision dataset's static check import
    neither torchvision nor torch.export (each pulls in torch._dynamo: together about 2 s of every
    worker's start); loading a torchvision model imports torchvision (here weights missing from an
    empty cache: refused once torchvision has named the file)."""
    import os
    import subprocess
    import sys

    probe = (
        "import sys; import zootriage.worker.tasks, zootriage.core.scoring\n"
        "from zootriage.core.data.folders import check_torchvision_name\n"
        "from zootriage.core.zoo.loader import load_model\n"
        "from zootriage.core.zoo.refs import parse_model_ref\n"
        "check_torchvision_name('CIFAR10')\n"
        "try:\n    check_torchvision_name('LSUN')\n"
        "except Exception as exc:\n    print(type(exc).__name__)\n"
        "print('torchvision' in sys.modules, 'torch._dynamo' in sys.modules)\n"
        "try:\n    load_model(parse_model_ref('tv:resnet18.IMAGENET1K_V1'))\n"
        "except Exception as exc:\n    print(type(exc).__name__)\n"
        "print('torchvision' in sys.modules)\n"
    )
    env = {**os.environ, "TORCH_HOME": str(tmp_path / "torch")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False, env=env)
    expected = ["UnknownDataset", "False", "False", "WeightsNotAvailable", "True"]
    assert out.stdout.split() == expected, out.stderr
