"""Training recipes and the study's model list (the zoo grid, the v1/v2 arm, the random-init floor).

A :class:`Recipe` holds everything that changes how a model is trained. The learning rate is set
every optimiser step from :func:`lr_factor`, a pure function of the step, so a resumed run follows
exactly the schedule of an uninterrupted one:

- ``cosine``: after ``warmup_epochs`` of linear warm-up (factor (s+1)/W over the W warm-up steps),
  factor ½(1 + cos(π · (s − W) / (T − W))) over the remaining steps (T = total steps);
- ``step``: factor 1, then ``gamma`` from epoch round(``step_at`` · epochs) on.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from zootriage.core.backtest.config import StudyConfig, TaskName

Arm = Literal["zoo", "v1", "v2", "floor"]


@dataclass(frozen=True)
class Recipe:
    name: str
    optimizer: Literal["sgd", "adamw"]
    lr: float
    weight_decay: float
    batch_size: int
    epochs: int
    schedule: Literal["cosine", "step"] = "cosine"
    warmup_epochs: int = 0
    step_at: float = 2 / 3
    gamma: float = 0.1
    label_smoothing: float = 0.0
    crop_padding: int = 0
    rotation_degrees: float = 0.0
    ema_decay: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ModelSpec:
    """One model of the study: its task, architecture, recipe (``None`` for an untrained floor
    model), seed and arm."""

    task: TaskName
    arch: str
    recipe: Recipe | None
    seed: int
    arm: Arm

    @property
    def recipe_name(self) -> str:
        return "random-init" if self.recipe is None else self.recipe.name

    @property
    def name(self) -> str:
        return f"{self.task}-{self.arch}-{self.recipe_name}-s{self.seed}"


def lr_factor(recipe: Recipe, step: int, steps_per_epoch: int) -> float:
    """The multiplier of the base learning rate at optimiser step ``step`` (0-based)."""
    total = recipe.epochs * steps_per_epoch
    if recipe.schedule == "step":
        return recipe.gamma if step >= round(recipe.step_at * recipe.epochs) * steps_per_epoch else 1.0
    warm = min(recipe.warmup_epochs * steps_per_epoch, total - 1)
    if step < warm:
        return (step + 1) / warm
    return 0.5 * (1.0 + math.cos(math.pi * (step - warm) / max(total - warm, 1)))


def _scaled(epochs: int, scale: float) -> int:
    return max(1, round(epochs * scale))


def zoo_recipes(config: StudyConfig) -> list[Recipe]:
    """The grid's recipes in config order: one per (group, lr, weight decay)."""
    out = []
    for group in config.recipes:
        for lr in group.lrs:
            for wd in group.weight_decays:
                out.append(
                    Recipe(
                        f"{group.optimizer}-lr{lr:g}-wd{wd:g}",
                        group.optimizer,
                        lr,
                        wd,
                        group.batch_size,
                        _scaled(group.epochs, config.epoch_scale),
                    )
                )
    names = [r.name for r in out]
    if len(set(names)) != len(names):
        raise ValueError(f"the recipe grid names a recipe twice: {sorted(names)}")
    return out


def v1_v2_recipes(config: StudyConfig) -> tuple[Recipe, Recipe]:
    """The v1 and v2 recipes of the plan (both SGD with momentum 0.9)."""
    if config.v1v2 is None:
        raise ValueError("this study has no v1/v2 arm")
    v1, v2 = config.v1v2.v1, config.v1v2.v2
    scale = config.epoch_scale
    return (
        Recipe(
            "v1",
            "sgd",
            v1.lr,
            v1.weight_decay,
            v1.batch_size,
            _scaled(v1.epochs, scale),
            schedule="step",
            step_at=v1.step_at,
            gamma=v1.gamma,
        ),
        Recipe(
            "v2",
            "sgd",
            v2.lr,
            v2.weight_decay,
            v2.batch_size,
            _scaled(v2.epochs, scale),
            warmup_epochs=v2.warmup_epochs,
            label_smoothing=v2.label_smoothing,
            crop_padding=v2.crop_padding,
            rotation_degrees=v2.rotation_degrees,
            ema_decay=v2.ema_decay,
        ),
    )


def model_specs(config: StudyConfig) -> list[ModelSpec]:
    """Every trained model, in a fixed order: task A zoo, task B zoo, then the v1/v2 arm."""
    out = []
    recipes = zoo_recipes(config)
    for task in ("A", "B"):
        for arch in config.task(task).archs:
            for recipe in recipes:
                out += [ModelSpec(task, arch, recipe, seed, "zoo") for seed in config.seeds]
    if config.v1v2 is not None:
        v1, v2 = v1_v2_recipes(config)
        for arch in config.v1v2.archs:
            for seed in config.v1v2.seeds:
                out += [ModelSpec("A", arch, v1, seed, "v1"), ModelSpec("A", arch, v2, seed, "v2")]
    return out


def floor_specs(config: StudyConfig) -> list[ModelSpec]:
    """The untrained models of each task's architectures (seeds 0 … floor_models − 1)."""
    return [
        ModelSpec(task, arch, None, seed, "floor")
        for task in ("A", "B")
        for arch in config.task(task).archs
        for seed in range(config.probe.floor_models)
    ]
