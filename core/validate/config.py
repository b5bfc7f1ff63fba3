"""The study's grid and protocol, read from a TOML file (``studies/default.toml``, ``studies/full.toml``).

Every key is checked once here: an unknown key, a wrong type or an out-of-range value raises
``ValueError`` naming it, so a typo never silently runs the wrong study.
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from zootriage.core.glue import CENTERINGS, Centering, Dichotomy
from zootriage.core.validate.shifts import SHIFTS
from zootriage.core.validate.train import ARCHITECTURES, OPTIMIZERS, TrainSpec

VARIANT_DICHOTOMIES: tuple[str, ...] = ("one_vs_rest", "random")


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


_SECTIONS: dict[str, set[str]] = {
    "": {"name", "seed", "train", "keep", "markers", "ood", "shifts", "stats"},
    "train": {"archs", "seeds", "epochs", "batch_size", "per_class", "optimizers"},
    "keep": {"train_acc_min", "id_acc_band"},
    "markers": {"per_class", "points_per_class", "n_t", "repeats", "variants"},
    "ood": {"per_class", "test_fraction", "c_grid"},
    "shifts": {"per_class", *SHIFTS},
    "stats": {"n_boot"},
}


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    part = data if name == "" else data.get(name)
    if not isinstance(part, dict):
        raise ValueError(f"study config: missing section [{name}]")
    unknown = sorted(set(part) - _SECTIONS[name])
    if unknown:
        raise ValueError(f"study config [{name or 'top level'}]: unknown key(s) {unknown}")
    return part


def _get(part: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in part:
        raise ValueError(f"study config [{where}]: missing key {key!r}")
    value = part[key]
    ok = (
        isinstance(value, kind) and not isinstance(value, bool)
        if kind is not bool
        else isinstance(value, bool)
    )
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        raise ValueError(f"study config [{where}] {key}: expected {kind.__name__}, got {value!r}")
    return value


def _list(part: dict[str, Any], key: str, kind: type, where: str) -> tuple[Any, ...]:
    values = _get(part, key, list, where)
    if not values:
        raise ValueError(f"study config [{where}] {key}: must not be empty")
    return tuple(_get({key: v}, key, kind, where) for v in values)


def _positive(where: str, **values: float) -> None:
    for key, value in values.items():
        if not value > 0:
            raise ValueError(f"study config [{where}] {key}: must be > 0, got {value}")


def parse_config(data: dict[str, Any]) -> StudyConfig:
    """Validate a parsed TOML mapping into a :class:`StudyConfig`."""
    top = _section(data, "")
    train, keep, markers = _section(data, "train"), _section(data, "keep"), _section(data, "markers")
    ood, shifts, stats = _section(data, "ood"), _section(data, "shifts"), _section(data, "stats")
    archs = _list(train, "archs", str, "train")
    for arch in archs:
        if arch not in ARCHITECTURES:
            raise ValueError(f"study config [train] archs: unknown {arch!r}; known: {sorted(ARCHITECTURES)}")
    raw_opts = _get(train, "optimizers", dict, "train")
    optimizers = {}
    for opt, grid in raw_opts.items():
        where = f"train.optimizers.{opt}"
        if opt not in OPTIMIZERS or not isinstance(grid, dict):
            raise ValueError(f"study config [{where}]: unknown optimizer; known: {OPTIMIZERS}")
        if set(grid) != {"lrs", "weight_decays"}:
            raise ValueError(f"study config [{where}]: needs exactly the keys lrs and weight_decays")
        optimizers[opt] = OptimizerGrid(
            _list(grid, "lrs", float, where), _list(grid, "weight_decays", float, where)
        )
    if not optimizers:
        raise ValueError("study config [train] optimizers: name at least one")
    band = _list(keep, "id_acc_band", float, "keep")
    if len(band) != 2 or not 0 <= band[0] <= band[1] <= 1:
        raise ValueError(f"study config [keep] id_acc_band: need [low, high] within [0, 1], got {list(band)}")
    variants = []
    for item in _get(markers, "variants", list, "markers"):
        if (
            not isinstance(item, list)
            or len(item) != 2
            or item[0] not in VARIANT_DICHOTOMIES
            or item[1] not in CENTERINGS
        ):
            raise ValueError(
                f"study config [markers] variants: each is [dichotomy, centering] with dichotomy in "
                f"{VARIANT_DICHOTOMIES} and centering in {CENTERINGS}, got {item!r}"
            )
        variants.append((cast(Dichotomy, item[0]), cast(Centering, item[1])))
    if ("one_vs_rest", "none") not in variants:
        raise ValueError("study config [markers] variants: must include the default ['one_vs_rest', 'none']")
    shift_values = {k: _get(shifts, k, float, "shifts") for k in SHIFTS if k in shifts}
    config = StudyConfig(
        name=_get(top, "name", str, "top level"),
        seed=_get(top, "seed", int, "top level"),
        archs=archs,
        seeds=_list(train, "seeds", int, "train"),
        optimizers=optimizers,
        epochs=_get(train, "epochs", int, "train"),
        batch_size=_get(train, "batch_size", int, "train"),
        train_per_class=_get(train, "per_class", int, "train"),
        train_acc_min=_get(keep, "train_acc_min", float, "keep"),
        id_acc_band=(band[0], band[1]),
        marker_per_class=_get(markers, "per_class", int, "markers"),
        points_per_class=_get(markers, "points_per_class", int, "markers"),
        n_t=_get(markers, "n_t", int, "markers"),
        repeats=_get(markers, "repeats", int, "markers"),
        variants=tuple(variants),
        ood_per_class=_get(ood, "per_class", int, "ood"),
        ood_test_fraction=_get(ood, "test_fraction", float, "ood"),
        c_grid=_list(ood, "c_grid", float, "ood"),
        shift_per_class=_get(shifts, "per_class", int, "shifts"),
        shifts=shift_values,
        n_boot=_get(stats, "n_boot", int, "stats"),
    )
    _positive("train", epochs=config.epochs, batch_size=config.batch_size, per_class=config.train_per_class)
    _positive("markers", per_class=config.marker_per_class, n_t=config.n_t, repeats=config.repeats)
    _positive(
        "ood", per_class=config.ood_per_class, **{f"c_grid[{i}]": c for i, c in enumerate(config.c_grid)}
    )
    _positive("shifts", per_class=config.shift_per_class)
    _positive("stats", n_boot=config.n_boot)
    if config.points_per_class < 2:
        raise ValueError("study config [markers] points_per_class: must be >= 2")
    if not 0 < config.ood_test_fraction < 1:
        raise ValueError("study config [ood] test_fraction: must be in (0, 1)")
    for opt, grid in config.optimizers.items():
        _positive(f"train.optimizers.{opt}", **{f"lrs[{i}]": v for i, v in enumerate(grid.lrs)})
    return config


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
