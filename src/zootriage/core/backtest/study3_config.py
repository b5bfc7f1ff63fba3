"""Study 3's configuration (``studies/confirmatory.toml``; ``studies/tiny-confirmatory.toml`` for tests).

As for study 2 (:mod:`core.backtest.config`): a pydantic model with ``extra="forbid"`` everywhere, so a
typo or an impossible value is rejected at load time with its key named. Tasks are given by dataset,
split and class lists (docs/study/PLAN-3.md, "Data, tasks and the outcome"); the recipes by the v1
settings and the 2×2×2 grid's factors.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from zootriage.core.backtest.study3_models import ARCHITECTURES


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ImageSet(_Strict):
    """``per_class`` images of each of ``classes`` from ``source`` (``dataset:split``)."""

    source: str = Field(pattern=r"^[a-z0-9-]+:[a-z]+$")
    classes: list[int] = Field(min_length=2)
    per_class: int = Field(ge=1)

    @field_validator("classes")
    @classmethod
    def _distinct(cls, values: list[int]) -> list[int]:
        if len(set(values)) != len(values) or min(values) < 0:
            raise ValueError("classes must be distinct and >= 0")
        return values


class TaskSpec(_Strict):
    """One task: ID training and test images (same classes), OOD images (other classes)."""

    name: str = Field(pattern=r"^[A-Z]$")
    train: ImageSet
    test: ImageSet
    ood: ImageSet
    points_per_class: int = Field(ge=2)

    @model_validator(mode="after")
    def _classes(self) -> TaskSpec:
        if self.train.classes != self.test.classes:
            raise ValueError(f"task {self.name}: ID test classes must be the training classes")
        if set(self.ood.classes) & set(self.train.classes) and self.ood.source == self.train.source:
            raise ValueError(f"task {self.name}: OOD classes overlap the training classes")
        if self.points_per_class > self.test.per_class:
            raise ValueError(f"task {self.name}: points_per_class exceeds the ID test images per class")
        return self


class V1Settings(_Strict):
    epochs: int = Field(ge=1)
    weight_decay: float = Field(ge=0)
    step_at: float = Field(gt=0, lt=1)
    gamma: float = Field(gt=0, lt=1)


class GridSettings(_Strict):
    """The grid base (cosine, warm-up, weight decay) and what each factor turns on."""

    epochs: int = Field(ge=1)
    long_epochs: int = Field(ge=1)
    warmup_epochs: int = Field(ge=0)
    weight_decay: float = Field(ge=0)
    label_smoothing: float = Field(gt=0, lt=1)
    crop_padding: int = Field(ge=1, le=8)
    rotation_degrees: float = Field(ge=0, le=180)
    ema_decay: float = Field(gt=0, lt=1)

    @model_validator(mode="after")
    def _long(self) -> GridSettings:
        if self.long_epochs <= self.epochs:
            raise ValueError("long_epochs must exceed epochs (the ema+long factor lengthens training)")
        return self


class RecipeSettings(_Strict):
    lr: float = Field(gt=0)
    batch_size: int = Field(ge=1)
    v1: V1Settings
    grid: GridSettings


class MarkerSettings(_Strict):
    n_t: int = Field(ge=1)
    repeats: int = Field(ge=1)
    centerings: list[Literal["none", "global"]] = ["none", "global"]


class ProbeSettings(_Strict):
    """``probe20``: ``draws`` seeded draws of ``shots`` fit images per class; C from ``c_grid`` on the
    random-init models. ``fewshot``/``episodes``: the secondary nearest-class-mean probes."""

    shots: int = Field(ge=1)
    draws: int = Field(ge=1)
    c_grid: list[float] = Field(min_length=1)
    val_fraction: float = Field(gt=0, lt=1)
    fewshot: list[int] = [5, 20]
    episodes: int = Field(ge=1)

    @field_validator("c_grid")
    @classmethod
    def _positive_c(cls, values: list[float]) -> list[float]:
        if any(v <= 0 for v in values):
            raise ValueError("every C must be > 0")
        return values


class StatsSettings(_Strict):
    n_boot: int = Field(ge=1)
    alpha: float = Field(gt=0, lt=1)
    min_archs: int = Field(ge=1, le=20)
    admission_gain: float = Field(ge=0)
    admission_p: float = Field(gt=0, lt=1)
    degenerate_max_fraction: float = Field(ge=0, le=1)


class Study3Config(_Strict):
    """The whole study. ``epoch_scale`` multiplies every recipe's epochs (the plan's cost rule)."""

    name: str = Field(min_length=1)
    seed: int = Field(ge=0)
    seeds: list[int] = Field(min_length=1)
    floor_models: int = Field(ge=1)
    epoch_scale: float = Field(gt=0, le=1)
    archs: list[str] = Field(min_length=1)
    tasks: list[TaskSpec] = Field(min_length=1)
    recipes: RecipeSettings
    markers: MarkerSettings
    probe: ProbeSettings
    stats: StatsSettings

    @field_validator("archs")
    @classmethod
    def _known_archs(cls, values: list[str]) -> list[str]:
        unknown = sorted(set(values) - set(ARCHITECTURES))
        if unknown:
            raise ValueError(f"unknown architecture(s) {unknown}; known: {sorted(ARCHITECTURES)}")
        if len(set(values)) != len(values):
            raise ValueError("an architecture is listed twice")
        return values

    @model_validator(mode="after")
    def _tasks(self) -> Study3Config:
        names = [t.name for t in self.tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"task names must be distinct, got {names}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("a seed is listed twice")
        for task in self.tasks:
            half = task.ood.per_class // 2
            needed = self.probe.shots / (1 - self.probe.val_fraction)
            if half < needed or half < max(self.probe.fewshot, default=1):
                raise ValueError(f"task {task.name}: the OOD fit half is too small for the probes")
        return self

    def task(self, name: str) -> TaskSpec:
        for task in self.tasks:
            if task.name == name:
                return task
        raise ValueError(f"no task {name!r}; tasks: {[t.name for t in self.tasks]}")


def load_study3_config(path: Path | str) -> Study3Config:
    """Read and validate a study-3 config; ``ValueError`` naming the problem for anything wrong."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no study config at {path}")
    try:
        return Study3Config.model_validate(tomllib.loads(path.read_text()))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid TOML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'top level'}: {err['msg']}" for err in exc.errors()
        )
        raise ValueError(f"{path}: {problems}") from None
