"""The study's parts: config validation, the grid of the plan, architectures, splits, schedules,
resumable deterministic training, few-shot probes and the exclusion rules."""

from __future__ import annotations

import math
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from zootriage.core.backtest.analysis import exclusions
from zootriage.core.backtest.config import StudyConfig, load_config
from zootriage.core.backtest.measure import regime
from zootriage.core.backtest.nets import PENULTIMATE, PreActBlock, build
from zootriage.core.backtest.probes import ProbeSplit, choose_task_c, few_shot_accuracy
from zootriage.core.backtest.recipes import (
    ModelSpec,
    Recipe,
    floor_specs,
    lr_factor,
    model_specs,
    zoo_recipes,
)
from zootriage.core.backtest.splits import Images, load_task
from zootriage.core.backtest.tables import accuracy_filter, kept
from zootriage.core.backtest.training import refresh_batch_norm, train_model
from zootriage.core.glue import analyze

STUDIES = Path(__file__).resolve().parents[2] / "studies"


def test_preregistered_grid_is_the_plans() -> None:
    config = load_config(STUDIES / "preregistered.toml")
    specs = model_specs(config)
    assert sum(s.task == "A" and s.arm == "zoo" for s in specs) == 165
    assert sum(s.task == "B" for s in specs) == 66
    assert sum(s.arm in ("v1", "v2") for s in specs) == 50
    recipes = {r.name: r for r in zoo_recipes(config)}
    assert len(recipes) == 11
    assert (recipes["sgd-lr0.003-wd0"].batch_size, recipes["sgd-lr0.003-wd0"].epochs) == (32, 8)
    assert (recipes["sgd-lr0.2-wd0.0005"].batch_size, recipes["sgd-lr0.2-wd0.0005"].epochs) == (128, 24)
    assert (recipes["sgd-lr0.02-wd0.005"].batch_size, recipes["sgd-lr0.02-wd0.005"].epochs) == (64, 16)
    assert (recipes["adamw-lr0.001-wd0.1"].batch_size, recipes["adamw-lr0.001-wd0.1"].epochs) == (64, 16)
    assert len(floor_specs(config)) == 3 * (5 + 2)
    assert (config.task_a.points_per_class, config.task_b.points_per_class) == (50, 40)
    assert config.stats.n_perm == config.stats.n_boot == 10_000 and config.markers.n_t == 1000


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d: d["task_a"].update(archs=["resnet"]), "unknown architecture"),
        (lambda d: d["probe"].update(typo=1), "probe.typo"),
        (lambda d: d["recipes"][0].update(lrs=[-1.0]), "learning rate"),
        (lambda d: d["stats"].update(n_boot=0), "stats.n_boot"),
        (lambda d: d["v1v2"].update(archs=["mlp4"]), "not task A architectures"),
        (lambda d: d.update(epoch_scale="half"), "epoch_scale"),
    ],
)
def test_bad_configs_name_the_problem(tmp_path: Path, edit: Any, message: str) -> None:
    data = tomllib.loads((STUDIES / "tiny.toml").read_text())
    edit(data)
    path = tmp_path / "bad.toml"
    path.write_text(_toml(data))
    with pytest.raises(ValueError, match=message):
        load_config(path)


def _toml(data: dict[str, Any], prefix: str = "") -> str:
    """A minimal TOML writer for the test's edited configs (tables, arrays of tables, scalars)."""
    lines, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value, False))
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            tables.append((key, value, True))
        else:
            lines.append(f"{key} = {_value(value)}")
    out = "\n".join(lines) + "\n"
    for key, value, is_array in tables:
        name = f"{prefix}{key}"
        for item in value if is_array else [value]:
            out += f"\n[[{name}]]\n" if is_array else f"\n[{name}]\n"
            out += _toml(item, prefix=f"{name}.")
    return out


def _value(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return repr(value)


@pytest.mark.parametrize("arch", ["mlp2", "mlp4", "cnn", "resnet-w8", "resnet-w16"])
def test_architectures_have_a_512d_relu_penultimate_layer(arch: str) -> None:
    model = build(arch, 5, seed=0).eval()
    x = torch.rand(3, 1, 28, 28)
    feats = model.body(x)
    assert feats.shape == (3, PENULTIMATE) and bool((feats >= 0).all())
    assert model(x).shape == (3, 5)
    assert torch.equal(build(arch, 5, seed=0).head.weight, model.head.weight)


def test_resnet_has_three_stages_of_two_preactivation_blocks() -> None:
    for width in (8, 16):
        blocks = [m for m in build(f"resnet-w{width}", 10, 0).modules() if isinstance(m, PreActBlock)]
        assert [b.conv2.out_channels for b in blocks] == [width] * 2 + [2 * width] * 2 + [4 * width] * 2


def test_task_splits_are_disjoint_class_balanced_and_fixed() -> None:
    config = load_config(STUDIES / "preregistered.toml")
    a = load_task("A", config)
    assert not set(a.indices["train"]) & set(a.indices["test"])
    assert np.bincount(a.train.y.numpy()).tolist() == [700] * 5
    assert np.bincount(a.test.y.numpy()).tolist() == [200] * 5
    assert sorted(set(a.ood.y.tolist())) == [5, 6, 7, 8, 9] and len(a.ood.y) == 2000
    fit, score = a.ood.y.numpy()[a.probe_fit], a.ood.y.numpy()[a.probe_score]
    assert np.bincount(fit)[5:].tolist() == [200] * 5 and np.bincount(score)[5:].tolist() == [200] * 5
    assert np.array_equal(load_task("A", config).indices["test"], a.indices["test"])
    b = load_task("B", config)
    assert np.bincount(b.train.y.numpy()).tolist() == [1000] * 10 and len(b.test.y) == 5000
    assert sorted(set(b.ood.y.tolist())) == list(range(10)) and len(b.probe_score) == 2000


def test_schedules() -> None:
    cosine = Recipe("c", "sgd", 0.1, 0.0, 10, epochs=4, warmup_epochs=1)
    assert lr_factor(cosine, 0, 10) == pytest.approx(0.1)  # warm-up step 1 of 10
    assert lr_factor(cosine, 9, 10) == pytest.approx(1.0)
    assert lr_factor(cosine, 10, 10) == pytest.approx(1.0)  # cosine starts at its peak
    assert lr_factor(cosine, 25, 10) == pytest.approx(0.5)  # half-way through the 30 cosine steps
    step = Recipe("s", "sgd", 0.05, 0.0, 10, epochs=6, schedule="step", step_at=2 / 3, gamma=0.1)
    assert [lr_factor(step, e * 10, 10) for e in range(6)] == [1.0] * 4 + [0.1] * 2


def _images(n: int = 60) -> Images:
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(n) % 3
    x = torch.rand(n, 1, 28, 28, generator=gen) * 0.2
    x[torch.arange(n), 0, y * 8 + 2, 5:20] = 1.0  # a class-specific bright row
    return Images(x, y)


V2_LIKE = Recipe(
    "v2",
    "sgd",
    0.05,
    2e-5,
    16,
    epochs=2,
    warmup_epochs=1,
    label_smoothing=0.1,
    crop_padding=2,
    rotation_degrees=10.0,
    ema_decay=0.9,
)


def test_training_resumed_from_an_epoch_checkpoint_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    spec = ModelSpec("A", "mlp2", V2_LIKE, 0, "v2")
    dev = torch.device("cpu")
    straight = train_model(spec, _images(), 3, tmp_path / "straight.pt", dev)
    train_model(spec, _images(), 3, tmp_path / "resumed.pt", dev, max_epochs=1)
    assert torch.load(tmp_path / "resumed.pt", weights_only=True)["epoch"] == 1
    resumed = train_model(spec, _images(), 3, tmp_path / "resumed.pt", dev)
    for (name, a), b in zip(
        straight.model.state_dict().items(), resumed.model.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name
    assert straight.final_loss == resumed.final_loss and not straight.nan_loss
    # the EMA weights are what is returned, and they differ from the raw weights
    raw = torch.load(tmp_path / "straight.pt", weights_only=True)["model"]
    assert not torch.equal(raw["body.1.weight"], straight.model.state_dict()["body.1.weight"])


def test_a_non_finite_loss_marks_the_model_diverged_and_is_not_retrained(tmp_path: Path) -> None:
    spec = ModelSpec("A", "mlp2", Recipe("huge", "sgd", 1e6, 0.0, 8, epochs=3), 0, "zoo")
    trained = train_model(spec, _images(), 3, tmp_path / "m.pt", torch.device("cpu"))
    assert trained.nan_loss and math.isnan(trained.final_loss)
    state = torch.load(tmp_path / "m.pt", weights_only=True)
    assert state["nan"] and state["epoch"] == 3


def test_ema_weights_get_batch_norm_statistics_of_their_own() -> None:
    """The statistics after the refresh are those of the model's own activations on the images: the
    mean of the per-batch means and of the per-batch unbiased variances (equal batches here), and
    whatever they were before (the live model's) is gone. A model without BatchNorm is untouched."""
    torch.manual_seed(0)
    x = torch.randn(96, 5, dtype=torch.float64) * 3 + 1
    linear = torch.nn.Linear(5, 4).double()
    model = torch.nn.Sequential(linear, torch.nn.BatchNorm1d(4).double())
    bn = model[1]
    bn.running_mean.fill_(100.0)  # the live model's, for other weights
    refresh_batch_norm(model, x, batch_size=32)
    with torch.no_grad():
        batches = [linear(b) for b in x.split(32)]
    expected_mean = torch.stack([b.mean(0) for b in batches]).mean(0)
    expected_var = torch.stack([b.var(0, unbiased=True) for b in batches]).mean(0)
    assert torch.allclose(bn.running_mean, expected_mean, atol=1e-10)
    assert torch.allclose(bn.running_var, expected_var, atol=1e-10)
    plain = torch.nn.Sequential(torch.nn.Linear(5, 4).double())
    before = [p.clone() for p in plain.parameters()]
    refresh_batch_norm(plain, x, batch_size=32)
    assert all(torch.equal(a, b) for a, b in zip(before, plain.parameters(), strict=True))


def test_few_shot_nearest_class_mean() -> None:
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 30)
    centres = rng.normal(size=(4, 16)) * 10
    x = centres[labels] + rng.normal(size=(120, 16))
    half = np.arange(120) % 2 == 0
    split = ProbeSplit(x[half], labels[half], x[~half], labels[~half])
    dev = torch.device("cpu")
    assert few_shot_accuracy(split, 5, 20, seed=0, device=dev) == 1.0
    noise = ProbeSplit(rng.normal(size=(60, 16)), labels[half], rng.normal(size=(60, 16)), labels[~half])
    assert few_shot_accuracy(noise, 5, 50, seed=0, device=dev) < 0.45
    assert few_shot_accuracy(split, 5, 20, seed=0, device=dev) == few_shot_accuracy(split, 5, 20, 0, dev)
    assert choose_task_c({0.1: 0.8, 1.0: 0.8, 10.0: 0.7}) == 0.1


def test_regime_fields_are_read_from_the_analysis_and_none_without_one() -> None:
    """40 points in 8 dimensions after global centring: some one-vs-rest dichotomies cannot be
    separated through the origin, so the study must record a degenerate analysis."""
    x = np.random.default_rng(0).normal(size=(40, 8))
    glue = analyze(x, np.repeat(np.arange(4), 10), n_t=50, centering="global")
    assert glue.regime is not None
    recorded = regime(glue)
    assert recorded["degenerate"] is True
    assert recorded["separable_fraction"] == glue.regime.separable_fraction < 1.0
    assert recorded["saturated_fraction"] == glue.regime.saturated_fraction
    bare = replace(glue, regime=None)
    assert regime(bare) == {"degenerate": None, "separable_fraction": None, "saturated_fraction": None}


def _model(i: int, arch: str, degenerate: bool, id_acc: float, train_acc: float = 1.0) -> dict[str, Any]:
    reg = {"degenerate": degenerate, "separable_fraction": None, "saturated_fraction": None}
    return {
        "name": f"m{i}",
        "task": "A",
        "arch": arch,
        "recipe": f"r{i % 3}",
        "seed": i,
        "arm": "zoo",
        "diverged": False,
        "train_acc": train_acc,
        "id_acc": id_acc,
        "geometry": {
            "none": {"regime": reg, "markers": {}},
            "global": {"regime": {**reg, "degenerate": False}, "markers": {}},
        },
    }


def test_exclusion_rules_degenerate_share_and_accuracy_filter() -> None:
    config = load_config(STUDIES / "tiny.toml")
    models = [_model(i, "cnn", degenerate=i < 3, id_acc=0.5 + i / 100) for i in range(10)]
    models.append({**_model(10, "cnn", False, 0.9), "diverged": True})
    excl = exclusions(models, config)["A"]
    assert (excl["models"], excl["diverged"]) == (11, 1)
    assert excl["degenerate"]["none"] == {"count": 3, "of": 10, "fraction": 0.3, "assessable": False}
    assert excl["degenerate"]["global"]["assessable"] is True
    assert len(kept(models, "none")) == 7 and len(kept(models, "global")) == 10
    # id_acc 0.50 … 0.59: the central 80 % keeps 0.509 … 0.581, i.e. drops the two ends
    filtered = accuracy_filter(kept(models, None), 0.99, 0.8)
    assert sorted(m["name"] for m in filtered) == [f"m{i}" for i in range(1, 9)]
    assert accuracy_filter([{**models[0], "train_acc": 0.98}], 0.99, 0.8) == []


def test_study_config_is_a_pydantic_model() -> None:
    config = load_config(STUDIES / "tiny.toml")
    assert isinstance(config, StudyConfig)
    assert StudyConfig.model_validate(config.model_dump()) == config
