"""The pre-registered study's configuration (``studies/preregistered.toml``; ``studies/tiny.toml`` for tests).

A pydantic model so that a typo, a wrong type or an impossible value is rejected once, at load time,
with the key named; ``extra="forbid"`` everywhere, so an unknown key never silently runs another study.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from zootriage.core.backtest.nets import ARCHITECTURES

TaskName = Literal["A", "B"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
        unknown = sorted(set(values) - set(ARCHITECTURES))
        if unknown:
            raise ValueError(f"unknown architecture(s) {unknown}; known: {sorted(ARCHITECTURES)}")
        return values


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
    """GLUE settings shared by both tasks (points per class are per task)."""

    n_t: int = Field(ge=1)
    repeats: int = Field(ge=1)
    centerings: list[Literal["none", "global"]] = ["none", "global"]


class ProbeConfig(_Strict):
    c_grid: list[float] = Field(min_length=1)
    val_fraction: float = Field(gt=0, lt=1)
    shots: list[int] = [5, 20]
    episodes: int = Field(ge=1)
    floor_models: int = Field(ge=1)

    @field_validator("c_grid")
    @classmethod
    def _positive_c(cls, values: list[float]) -> list[float]:
        if any(v <= 0 for v in values):
            raise ValueError("every C must be > 0")
        return values


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


def load_config(path: Path | str) -> StudyConfig:
    """Read and validate a study config; ``ValueError`` naming the problem for anything wrong."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no study config at {path}")
    try:
        data = tomllib.loads(path.read_text())
        return StudyConfig.model_validate(data)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid TOML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'top level'}: {err['msg']}" for err in exc.errors()
        )
        raise ValueError(f"{path}: {problems}") from None
