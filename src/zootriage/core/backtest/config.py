"""The studies' configurations, read by one loader (:func:`load_config`) parameterised by the study.

- Study 2, the registered study (docs/study/PLAN.md): :class:`StudyConfig`, ``studies/preregistered.toml``
  (``studies/tiny.toml`` for tests): tasks A and B by their sizes, the recipe grid, the v1/v2 arm.
- Study 3, the confirmatory study (docs/study/PLAN-3.md): :class:`Study3Config`,
  ``studies/confirmatory.toml`` (``studies/tiny-confirmatory.toml`` for tests): tasks by dataset, split
  and class lists ("Data, tasks and the outcome"), the recipes by the v1 settings and the 2×2×2 grid's
  factors.

Pydantic models, so that a typo, a wrong type or an impossible value is rejected once, at load time,
with the key named; ``extra="forbid"`` everywhere, so an unknown key never silently runs another study.
A study's ``config.json`` is its model's JSON dump: field names and order are part of the records.
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Literal, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from zootriage.core.backtest.nets import ARCHITECTURES
from zootriage.core.backtest.study3_models import ARCHITECTURES as STUDY3_ARCHITECTURES

TaskName = Literal["A", "B"]
Centerings = list[Literal["none", "global"]]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _known(values: list[str], known: Collection[str]) -> list[str]:
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"unknown architecture(s) {unknown}; known: {sorted(known)}")
    return values


def _positive(values: list[float]) -> list[float]:
    if any(v <= 0 for v in values):
        raise ValueError("every C must be > 0")
    return values


class RecipeGroup(_Strict):
    """Recipes sharing an optimiser, batch size and epochs: one per (lr, weight decay)."""

    optimizer: Literal["sgd", "adamw"]
    lrs: list[float] = Field(min_length=1)
    weight_decays: list[float] = Field(min_length=1)
    batch_size: int = Field(ge=1)
    epochs: int = Field(ge=1)

    @field_validator("lrs")
    @classmethod
    def _positive_lrs(cls, values: list[float]) -> list[float]:
        if any(v <= 0 for v in values):
            raise ValueError("every learning rate must be > 0")
        return values

    @field_validator("weight_decays")
    @classmethod
    def _non_negative_wds(cls, values: list[float]) -> list[float]:
        if any(v < 0 for v in values):
            raise ValueError("every weight decay must be >= 0")
        return values


class TaskConfig(_Strict):
    """One task's data sizes (images per class) and architectures."""

    archs: list[str] = Field(min_length=1)
    train_per_class: int = Field(ge=1)
    test_per_class: int = Field(ge=2)
    ood_per_class: int = Field(ge=4)
    points_per_class: int = Field(ge=2)

    @field_validator("archs")
    @classmethod
    def _known_archs(cls, values: list[str]) -> list[str]:
        return _known(values, ARCHITECTURES)


class V1Config(_Strict):
    """The "v1" recipe: SGD (momentum 0.9) with one step decay of ``gamma`` at ``step_at`` of training."""

    lr: float = Field(gt=0)
    weight_decay: float = Field(ge=0)
    epochs: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    step_at: float = Field(gt=0, lt=1)
    gamma: float = Field(gt=0, lt=1)


class V2Config(_Strict):
    """The "v2" recipe: cosine with warm-up, label smoothing, crop + rotation, EMA weights."""

    lr: float = Field(gt=0)
    weight_decay: float = Field(ge=0)
    epochs: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    warmup_epochs: int = Field(ge=0)
    label_smoothing: float = Field(ge=0, lt=1)
    crop_padding: int = Field(ge=0, le=8)
    rotation_degrees: float = Field(ge=0, le=180)
    ema_decay: float = Field(gt=0, lt=1)


class V1V2Config(_Strict):
    archs: list[str] = Field(min_length=1)
    seeds: list[int] = Field(min_length=1)
    v1: V1Config
    v2: V2Config


class MarkerConfig(_Strict):
    """GLUE settings shared by a study's tasks (points per class are per task)."""

    n_t: int = Field(ge=1)
    repeats: int = Field(ge=1)
    centerings: Centerings = ["none", "global"]


class ProbeConfig(_Strict):
    c_grid: list[float] = Field(min_length=1)
    val_fraction: float = Field(gt=0, lt=1)
    shots: list[int] = [5, 20]
    episodes: int = Field(ge=1)
    floor_models: int = Field(ge=1)

    _positive_c = field_validator("c_grid")(_positive)


class StatsConfig(_Strict):
    n_perm: int = Field(ge=1)
    n_boot: int = Field(ge=1)
    alpha: float = Field(gt=0, lt=1)
    degenerate_max_fraction: float = Field(ge=0, le=1)
    filter_train_acc_min: float = Field(ge=0, le=1)
    filter_central_fraction: float = Field(gt=0, le=1)


class StudyConfig(_Strict):
    """The whole study. ``epoch_scale`` multiplies every recipe's epochs (the plan's cost rule)."""

    name: str = Field(min_length=1)
    seed: int = Field(ge=0)
    seeds: list[int] = Field(min_length=1)
    epoch_scale: float = Field(gt=0, le=1)
    task_a: TaskConfig
    task_b: TaskConfig
    recipes: list[RecipeGroup] = Field(min_length=1)
    v1v2: V1V2Config | None = None
    markers: MarkerConfig
    probe: ProbeConfig
    stats: StatsConfig

    @model_validator(mode="after")
    def _v1v2_archs(self) -> StudyConfig:
        if self.v1v2 is not None:
            unknown = sorted(set(self.v1v2.archs) - set(self.task_a.archs))
            if unknown:
                raise ValueError(f"v1v2 archs {unknown} are not task A architectures")
        if any(shots < 1 for shots in self.probe.shots):
            raise ValueError("probe shots must be >= 1")
        return self

    def task(self, name: TaskName) -> TaskConfig:
        return self.task_a if name == "A" else self.task_b


# Study 3 (docs/study/PLAN-3.md)


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


class ProbeSettings(_Strict):
    """``probe20``: ``draws`` seeded draws of ``shots`` fit images per class; C from ``c_grid`` on the
    random-init models. ``fewshot``/``episodes``: the secondary nearest-class-mean probes."""

    shots: int = Field(ge=1)
    draws: int = Field(ge=1)
    c_grid: list[float] = Field(min_length=1)
    val_fraction: float = Field(gt=0, lt=1)
    fewshot: list[int] = [5, 20]
    episodes: int = Field(ge=1)

    _positive_c = field_validator("c_grid")(_positive)


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
    markers: MarkerConfig
    probe: ProbeSettings
    stats: StatsSettings

    @field_validator("archs")
    @classmethod
    def _known_archs(cls, values: list[str]) -> list[str]:
        _known(values, STUDY3_ARCHITECTURES)
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


Config = TypeVar("Config", bound=BaseModel)


@overload
def load_config(path: Path | str) -> StudyConfig: ...
@overload
def load_config(path: Path | str, study: type[Config]) -> Config: ...
def load_config(path: Path | str, study: type[BaseModel] = StudyConfig) -> BaseModel:
    """Read and validate the config of ``study`` (:class:`StudyConfig` or :class:`Study3Config`);
    ``ValueError`` naming the problem for anything wrong."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no study config at {path}")
    try:
        return study.model_validate(tomllib.loads(path.read_text()))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid TOML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'top level'}: {err['msg']}" for err in exc.errors()
        )
        raise ValueError(f"{path}: {problems}") from None


def load_study3_config(path: Path | str) -> Study3Config:
    """:func:`load_config` for study 3."""
    return load_config(path, Study3Config)
