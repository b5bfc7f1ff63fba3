"""The study's grid and protocol, read from a TOML file (``studies/default.toml``, ``studies/full.toml``).

The file's shape is a pydantic model (:class:`StudyFile`): an unknown key, a wrong type or an
out-of-range value raises ``ValueError`` naming it, so a typo never silently runs the wrong study.
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from zootriage.core.protocol import Centering, Dichotomy
from zootriage.core.study.shifts import SHIFTS
from zootriage.core.study.train import ARCHITECTURES, OPTIMIZERS, TrainSpec


@dataclass(frozen=True)
class OptimizerGrid:
    lrs: tuple[float, ...]
    weight_decays: tuple[float, ...]


@dataclass(frozen=True)
class StudyConfig:
    """A study: the zoo grid, which models to keep, and how markers and OOD outcomes are measured.

    - zoo: ``archs`` × ``optimizers`` (each with its own ``lrs`` × ``weight_decays``) × ``seeds``, trained
      ``epochs`` on ``train_per_class`` MNIST training images per class.
    - keep: train accuracy ≥ ``train_acc_min`` and ID test accuracy in ``id_acc_band`` (inclusive).
    - markers on ``marker_per_class`` ID test images per class; GLUE with ``points_per_class``, ``n_t``,
      ``repeats`` under every (dichotomy, centering) in ``variants``.
    - OOD probe on ``ood_per_class`` Animal-MNIST images per class, ``ood_test_fraction`` held out, C
      chosen from ``c_grid``; shifts on ``shift_per_class`` ID test images per class at ``shifts``.
    """

    name: str
    seed: int
    archs: tuple[str, ...]
    seeds: tuple[int, ...]
    optimizers: dict[str, OptimizerGrid]
    epochs: int
    batch_size: int
    train_per_class: int
    train_acc_min: float
    id_acc_band: tuple[float, float]
    marker_per_class: int
    points_per_class: int
    n_t: int
    repeats: int
    variants: tuple[tuple[Dichotomy, Centering], ...]
    ood_per_class: int
    ood_test_fraction: float
    c_grid: tuple[float, ...]
    shift_per_class: int
    shifts: dict[str, float]
    n_boot: int

    def specs(self) -> list[TrainSpec]:
        """Every zoo member, in a fixed order (architecture, optimiser, lr, weight decay, seed)."""
        out = []
        for arch, (opt, grid) in itertools.product(self.archs, sorted(self.optimizers.items())):
            for lr, wd, seed in itertools.product(grid.lrs, grid.weight_decays, self.seeds):
                out.append(TrainSpec(arch, opt, lr, wd, seed, self.epochs, self.batch_size))
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Section(BaseModel):
    """A TOML table: unknown keys, wrong types (a bool is no number, a string no int) are errors."""

    model_config = ConfigDict(extra="forbid", strict=True)


Positive = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]


class _Optimizer(_Section):
    lrs: Annotated[list[PositiveFloat], Field(min_length=1)]
    weight_decays: Annotated[list[float], Field(min_length=1)]


class _Train(_Section):
    archs: Annotated[list[str], Field(min_length=1)]
    seeds: Annotated[list[int], Field(min_length=1)]
    epochs: Positive
    batch_size: Positive
    per_class: Positive
    optimizers: Annotated[dict[str, _Optimizer], Field(min_length=1)]

    @field_validator("archs")
    @classmethod
    def _known_archs(cls, archs: list[str]) -> list[str]:
        for arch in archs:
            if arch not in ARCHITECTURES:
                raise ValueError(f"unknown {arch!r}; known: {sorted(ARCHITECTURES)}")
        return archs

    @field_validator("optimizers")
    @classmethod
    def _known_optimizers(cls, optimizers: dict[str, _Optimizer]) -> dict[str, _Optimizer]:
        unknown = sorted(set(optimizers) - set(OPTIMIZERS))
        if unknown:
            raise ValueError(f"unknown optimizer(s) {unknown}; known: {OPTIMIZERS}")
        return optimizers


class _Keep(_Section):
    train_acc_min: float
    id_acc_band: Annotated[list[Fraction], Field(min_length=2, max_length=2)]

    @field_validator("id_acc_band")
    @classmethod
    def _ordered(cls, band: list[float]) -> list[float]:
        if band[0] > band[1]:
            raise ValueError(f"need [low, high] with low <= high, got {band}")
        return band


class _Markers(_Section):
    per_class: Positive
    points_per_class: Annotated[int, Field(ge=2)]
    n_t: Positive
    repeats: Positive
    variants: list[tuple[Literal["one_vs_rest", "random"], Centering]]

    @field_validator("variants", mode="before")
    @classmethod
    def _pairs(cls, variants: Any) -> Any:
        """TOML writes each [dichotomy, centering] as a list; the field holds tuples."""
        if isinstance(variants, list):
            return [tuple(item) if isinstance(item, list) else item for item in variants]
        return variants

    @field_validator("variants")
    @classmethod
    def _has_default(cls, variants: list[tuple[str, str]]) -> list[tuple[str, str]]:
        if ("one_vs_rest", "none") not in variants:
            raise ValueError("must include the default ['one_vs_rest', 'none']")
        return variants


class _Ood(_Section):
    per_class: Positive
    test_fraction: Annotated[float, Field(gt=0, lt=1)]
    c_grid: Annotated[list[PositiveFloat], Field(min_length=1)]


class _Shifts(_Section):
    per_class: Positive
    noise: float | None = None
    blur: float | None = None
    contrast: float | None = None
    rotation: float | None = None


class _Stats(_Section):
    n_boot: Positive


class StudyFile(_Section):
    """The TOML file as written: top-level ``name`` and ``seed``, then one table per part."""

    name: str
    seed: int
    train: _Train
    keep: _Keep
    markers: _Markers
    ood: _Ood
    shifts: _Shifts
    stats: _Stats

    def to_config(self) -> StudyConfig:
        """The flat, immutable :class:`StudyConfig` the study runs on."""
        shift_values = {k: v for k in SHIFTS if (v := getattr(self.shifts, k)) is not None}
        optimizers = {
            name: OptimizerGrid(tuple(grid.lrs), tuple(grid.weight_decays))
            for name, grid in self.train.optimizers.items()
        }
        return StudyConfig(
            name=self.name,
            seed=self.seed,
            archs=tuple(self.train.archs),
            seeds=tuple(self.train.seeds),
            optimizers=optimizers,
            epochs=self.train.epochs,
            batch_size=self.train.batch_size,
            train_per_class=self.train.per_class,
            train_acc_min=self.keep.train_acc_min,
            id_acc_band=(self.keep.id_acc_band[0], self.keep.id_acc_band[1]),
            marker_per_class=self.markers.per_class,
            points_per_class=self.markers.points_per_class,
            n_t=self.markers.n_t,
            repeats=self.markers.repeats,
            variants=tuple((cast(Dichotomy, d), cast(Centering, c)) for d, c in self.markers.variants),
            ood_per_class=self.ood.per_class,
            ood_test_fraction=self.ood.test_fraction,
            c_grid=tuple(self.ood.c_grid),
            shift_per_class=self.shifts.per_class,
            shifts=shift_values,
            n_boot=self.stats.n_boot,
        )


def _describe(error: ValidationError) -> str:
    """One line per problem, each naming its key: ``train.epochs: Input should be a valid integer``."""
    lines = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "top level"
        what = {"extra_forbidden": "unknown key", "missing": "missing"}.get(problem["type"], problem["msg"])
        lines.append(f"{where}: {what}")
    return "study config: " + "; ".join(lines)


def parse_config(data: dict[str, Any]) -> StudyConfig:
    """Validate a parsed TOML mapping into a :class:`StudyConfig`; ``ValueError`` naming each bad key."""
    try:
        return StudyFile.model_validate(data).to_config()
    except ValidationError as exc:
        raise ValueError(_describe(exc)) from None


def load_config(path: Path | str) -> StudyConfig:
    """Read and validate a study config file; ``ValueError`` for a missing file or bad TOML."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no study config at {path}")
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid TOML: {exc}") from None
    return parse_config(data)
