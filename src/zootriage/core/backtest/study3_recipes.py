"""Study 3's recipes (docs/study/PLAN-3.md, "Recipes (9)"): v1 plus a 2×2×2 grid, and its model list.

All recipes are SGD with momentum 0.9 at one base learning rate and batch size, no dropout, built as
:class:`core.backtest.recipes.Recipe` so that the registered training code runs them unchanged.

- v1: step decay ×``gamma`` at ``step_at`` of training, its weight decay, nothing else.
- Grid cell ``g-a{a}-l{l}-e{e}``: cosine with warm-up and the grid's weight decay; a = 1 adds crop +
  rotation, l = 1 label smoothing, e = 1 the long schedule with an EMA of the weights.
- v2 parts (as ``core.backtest.recheck.v2_parts``): longer schedule, warm-up, label smoothing,
  augmentation and EMA count one each, so v1 has 0 and cell (a, l, e) has 1 + a + l + 2e.
- Decoupled pairs: recipe pairs whose part counts differ (33 of the 36 pairs of the 9 recipes).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from zootriage.core.backtest.config import Study3Config
from zootriage.core.backtest.recipes import Recipe

V1 = "v1"
V2 = "g-a1-l1-e1"
FLOOR = "random-init"


def cell_name(aug: int, ls: int, long: int) -> str:
    return f"g-a{aug}-l{ls}-e{long}"


def _scaled(epochs: int, scale: float) -> int:
    return max(1, round(epochs * scale))


def study3_recipes(config: Study3Config) -> list[Recipe]:
    """v1 then the 8 grid cells in (a, l, e) binary order, epochs scaled by ``config.epoch_scale``."""
    r, scale = config.recipes, config.epoch_scale
    out = [
        Recipe(
            V1, "sgd", r.lr, r.v1.weight_decay, r.batch_size, _scaled(r.v1.epochs, scale),
            schedule="step", step_at=r.v1.step_at, gamma=r.v1.gamma,
        )
    ]  # fmt: skip
    g = r.grid
    for aug, ls, long in itertools.product((0, 1), repeat=3):
        out.append(
            Recipe(
                cell_name(aug, ls, long),
                "sgd",
                r.lr,
                g.weight_decay,
                r.batch_size,
                _scaled(g.long_epochs if long else g.epochs, scale),
                schedule="cosine",
                warmup_epochs=g.warmup_epochs,
                label_smoothing=g.label_smoothing if ls else 0.0,
                crop_padding=g.crop_padding if aug else 0,
                rotation_degrees=g.rotation_degrees if aug else 0.0,
                ema_decay=g.ema_decay if long else None,
            )
        )
    return out


def v2_parts(recipe: Recipe, short_epochs: int) -> int:
    """How many of v2's ingredients ``recipe`` has; ``short_epochs`` is v1's (the short schedule)."""
    return sum(
        [
            recipe.epochs > short_epochs,
            recipe.warmup_epochs > 0,
            recipe.label_smoothing > 0,
            recipe.crop_padding > 0 or recipe.rotation_degrees > 0,
            recipe.ema_decay is not None,
        ]
    )


def recipe_parts(config: Study3Config) -> dict[str, int]:
    """Each recipe's number of v2 parts (recorded in every model record)."""
    recipes = study3_recipes(config)
    short = recipes[0].epochs
    return {r.name: v2_parts(r, short) for r in recipes}


def factors(name: str) -> dict[str, int] | None:
    """The grid factors of a cell name (``None`` for v1)."""
    if not name.startswith("g-"):
        return None
    _, aug, ls, long = name.split("-")
    return {"aug": int(aug[1]), "ls": int(ls[1]), "ema_long": int(long[1])}


def decoupled(parts_a: int, parts_b: int) -> bool:
    return parts_a != parts_b


@dataclass(frozen=True)
class Study3Spec:
    """One model: task, architecture, recipe (``None`` for an untrained floor model) and seed."""

    task: str
    arch: str
    recipe: Recipe | None
    seed: int

    @property
    def recipe_name(self) -> str:
        return FLOOR if self.recipe is None else self.recipe.name

    @property
    def name(self) -> str:
        return f"{self.task}-{self.arch}-{self.recipe_name}-s{self.seed}"


def model_specs(config: Study3Config) -> list[Study3Spec]:
    """Every trained model in a fixed order: task, architecture, recipe, seed."""
    recipes = study3_recipes(config)
    return [
        Study3Spec(task.name, arch, recipe, seed)
        for task in config.tasks
        for arch in config.archs
        for recipe in recipes
        for seed in config.seeds
    ]


def floor_specs(config: Study3Config, task: str) -> list[Study3Spec]:
    """The untrained models of one task (seeds 0 … floor_models − 1 per architecture)."""
    return [
        Study3Spec(task, arch, None, seed) for arch in config.archs for seed in range(config.floor_models)
    ]
