"""Study 3's recipes and configs (docs/study/PLAN-3.md, "Recipes (9)"): v1 + the 2×2×2 grid, each
recipe's v2 parts, the 33 decoupled and 3 tied pairs, the model count, and clear config errors."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from zootriage.core.backtest.config import Study3Config, load_study3_config
from zootriage.core.backtest.recipes import lr_factor
from zootriage.core.backtest.study3_recipes import (
    V1,
    V2,
    decoupled,
    factors,
    floor_specs,
    model_specs,
    recipe_parts,
    study3_recipes,
)

STUDIES = Path(__file__).resolve().parents[2] / "studies"


@pytest.fixture(scope="module")
def config() -> Study3Config:
    return load_study3_config(STUDIES / "confirmatory.toml")


def test_nine_recipes_with_the_plans_settings(config: Study3Config) -> None:
    recipes = {r.name: r for r in study3_recipes(config)}
    names = {V1} | {f"g-a{a}-l{l}-e{e}" for a, l, e in itertools.product((0, 1), repeat=3)}  # noqa: E741
    assert set(recipes) == names and len(recipes) == 9
    for r in recipes.values():
        assert (r.optimizer, r.lr, r.batch_size) == ("sgd", 0.05, 64)
    v1 = recipes[V1]
    assert (v1.epochs, v1.schedule, v1.weight_decay, v1.label_smoothing, v1.ema_decay) == (
        6,
        "step",
        1e-4,
        0,
        None,
    )
    assert lr_factor(v1, 4 * 10 - 1, 10) == 1.0 and lr_factor(v1, 4 * 10, 10) == pytest.approx(0.1)
    for name, r in recipes.items():
        f = factors(name)
        if f is None:
            continue
        assert (r.schedule, r.warmup_epochs, r.weight_decay) == ("cosine", 1, 2e-5)
        assert r.epochs == (18 if f["ema_long"] else 6)
        assert r.ema_decay == (0.999 if f["ema_long"] else None)
        assert r.label_smoothing == (0.1 if f["ls"] else 0.0)
        assert (r.crop_padding, r.rotation_degrees) == ((2, 10.0) if f["aug"] else (0, 0.0))


def test_v2_parts_and_decoupled_pairs(config: Study3Config) -> None:
    parts = recipe_parts(config)
    assert parts[V1] == 0 and parts[V2] == 5 and parts["g-a0-l0-e0"] == 1
    for name, n in parts.items():
        f = factors(name)
        if f is not None:
            assert n == 1 + f["aug"] + f["ls"] + 2 * f["ema_long"]
    pairs = list(itertools.combinations(sorted(parts), 2))
    assert len(pairs) == 36
    ties = {frozenset(p) for p in pairs if not decoupled(parts[p[0]], parts[p[1]])}
    assert ties == {
        frozenset({"g-a1-l0-e0", "g-a0-l1-e0"}),
        frozenset({"g-a1-l1-e0", "g-a0-l0-e1"}),
        frozenset({"g-a1-l0-e1", "g-a0-l1-e1"}),
    }
    assert sum(decoupled(parts[a], parts[b]) for a, b in pairs) == 33


def test_model_count_and_floors(config: Study3Config) -> None:
    specs = model_specs(config)
    assert len(specs) == 648 and len({s.name for s in specs}) == 648
    assert {s.task for s in specs} == {"A", "C"} and {s.seed for s in specs} == {0, 1, 2}
    floors = [f for t in ("A", "C") for f in floor_specs(config, t)]
    assert len(floors) == 72 and all(f.recipe is None for f in floors)


def test_epoch_scale_keeps_the_short_long_ratio(config: Study3Config) -> None:
    scaled = {r.name: r.epochs for r in study3_recipes(config.model_copy(update={"epoch_scale": 0.5}))}
    assert scaled[V1] == 3 and scaled["g-a0-l0-e0"] == 3 and scaled[V2] == 9
    assert recipe_parts(config.model_copy(update={"epoch_scale": 0.5})) == recipe_parts(config)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('archs = ["mlp-bn"', 'archs = ["cnn"'), "unknown architecture"),
        (("shots = 2", "shots = 2\nbogus = 1"), "bogus"),
        (("long_epochs = 3", "long_epochs = 2"), "long_epochs must exceed"),
        (('name = "C"', 'name = "A"'), "task names must be distinct"),
    ],
)
def test_bad_configs_are_named(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    text = (STUDIES / "tiny-confirmatory.toml").read_text()
    assert edit[0] in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(ValueError, match=message):
        load_study3_config(bad)
    with pytest.raises(ValueError, match="no study config"):
        load_study3_config(tmp_path / "missing.toml")
