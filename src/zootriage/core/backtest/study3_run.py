"""Run study 3 (docs/study/PLAN-3.md, "Running"): per task, the random-init floor and the probe's C,
then every model; and the plan's timing-only cost check.

Study 3 is a :class:`core.backtest.run.Zoo` run by the studies' one runner (:func:`run_zoo`), so it
resumes as study 2 does: a model interrupted mid-training resumes from its per-epoch checkpoint
(``checkpoints/<name>.pt``), a finished model's record (``models/<name>.json``) is written atomically
and a rerun skips it, and a task's C and floors (``probe/<task>.json``) are computed on random-init
models before any of its models is measured. ``shard=(k, n)`` trains the models whose position in
:func:`study3_recipes.model_specs` is k − 1 modulo n. Records carry the device and the model's wall and
CPU seconds (the budget log).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from zootriage.core.backtest.config import Study3Config, TaskName, TaskSpec
from zootriage.core.backtest.measure import PRIMARY3, measure3, outcomes3
from zootriage.core.backtest.probes import ProbeSplit, choose_probe20_c
from zootriage.core.backtest.recipes import ModelSpec
from zootriage.core.backtest.run import Progress, Zoo, epoch_seconds, limit_threads, probe_state, run_zoo
from zootriage.core.backtest.splits import TaskData, load_study3_task
from zootriage.core.backtest.study3_models import build
from zootriage.core.backtest.study3_recipes import (
    Study3Spec,
    factors,
    floor_specs,
    model_specs,
    recipe_parts,
    study3_recipes,
)
from zootriage.core.backtest.training import train_model
from zootriage.core.device import resolve_device

TIMING_KEYS = ("wall_seconds", "cpu_seconds")
CPU_HOURS_LIMIT = 7.0
MEASURE_SECONDS = 10.0
AUGMENT_OVERHEAD = 0.10


def _probe_state(
    task: TaskSpec, data: TaskData, config: Study3Config, out: Path, device: torch.device
) -> dict[str, Any]:
    def choose(splits: list[ProbeSplit]) -> tuple[float, dict[float, float]]:
        p = config.probe
        return choose_probe20_c(
            splits, p.c_grid, shots=p.shots, n_draws=p.draws, val_fraction=p.val_fraction, device=device
        )

    return probe_state(
        out / "probe" / f"{task.name}.json", task.name, floor_specs(config, task.name), data, device,
        builder=build, choose=choose, outcomes_of=lambda split, c: outcomes3(split, c, config, device),
    )  # fmt: skip


def _training_spec(spec: Study3Spec) -> ModelSpec:
    """The registered training code's view of a study-3 model (its task name is only a label)."""
    return ModelSpec(cast(TaskName, spec.task), spec.arch, spec.recipe, spec.seed, "zoo")


def _record(
    spec: Study3Spec, task: TaskSpec, data: TaskData, config: Study3Config, c: float, out: Path,
    device: torch.device, say: Progress,
) -> dict[str, Any]:  # fmt: skip
    wall, cpu = time.perf_counter(), time.process_time()
    trained = train_model(
        _training_spec(spec),
        data.train,
        len(task.train.classes),
        out / "checkpoints" / f"{spec.name}.pt",
        device,
        on_epoch=lambda e, loss: say(f"  {spec.name} epoch {e} loss {loss:.4f}"),
        builder=build,
    )
    record: dict[str, Any] = {
        "name": spec.name,
        "task": spec.task,
        "arch": spec.arch,
        "recipe": spec.recipe_name,
        "seed": spec.seed,
        "v2_parts": recipe_parts(config)[spec.recipe_name],
        "factors": factors(spec.recipe_name),
        "epochs": spec.recipe.epochs if spec.recipe is not None else 0,
        "final_loss": None if np.isnan(trained.final_loss) else trained.final_loss,
        "device": str(device),
    }
    if trained.nan_loss:
        record.update(train_acc=None, id_acc=None, diverged=True)
    else:
        record.update(measure3(trained.model, data, task.points_per_class, config, c, device))
    record.update(wall_seconds=time.perf_counter() - wall, cpu_seconds=time.process_time() - cpu)
    return record


def run_study3(
    config: Study3Config,
    out: Path,
    *,
    device: str | torch.device | None = None,
    threads: int = 1,
    progress: Progress | None = None,
    after_model: Callable[[str], None] | None = None,
    shard: tuple[int, int] | None = None,
) -> dict[str, Any] | None:
    """Train and measure every model not already done under ``out`` (:func:`run_zoo`).

    Returns ``{"models", "floors", "probe", "splits", "primary"}``, or None for a shard (a run without
    a shard then gathers every record). ``after_model(name)`` runs after each newly written record.
    """
    zoo = Zoo(
        config, [t.name for t in config.tasks], lambda task: load_study3_task(config.task(task), config.seed),
        model_specs(config),
        lambda task, data, out_, dev: _probe_state(config.task(task), data, config, out_, dev),
        lambda spec, data, c, out_, dev, say: _record(spec, config.task(spec.task), data, config, c, out_,
                                                      dev, say),
    )  # fmt: skip
    run = run_zoo(zoo, out, device=device, threads=threads, progress=progress, after_model=after_model,
                  shard=shard)  # fmt: skip
    if run is None:
        return None
    run.pop("states")
    return {**run, "primary": PRIMARY3}


def projection(
    config: Study3Config,
    seconds_per_image: dict[str, dict[str, float]],
    train_sizes: dict[str, int],
    threads: int,
) -> dict[str, Any]:
    """The plan's cost rule. Training CPU-seconds = Σ over models of epochs × images × the measured
    seconds per image of its architecture on its task (× 1.10 on augmented recipes), × threads; plus
    10 s per trained and per floor model for measurement. If the total exceeds 7.0 CPU-hours, every
    recipe's epochs are scaled by f = (7.0 h − measurement) / training, so that the projection is 7.0
    (the short/long ratio is kept); ``epoch_scale`` is then config.epoch_scale × f."""
    training = 0.0
    for spec in model_specs(config):
        assert spec.recipe is not None
        overhead = 1 + AUGMENT_OVERHEAD if spec.recipe.crop_padding > 0 else 1.0
        training += (
            spec.recipe.epochs * train_sizes[spec.task] * seconds_per_image[spec.task][spec.arch] * overhead
        )
    training *= threads
    n_trained = len(model_specs(config))
    n_floor = sum(len(floor_specs(config, t.name)) for t in config.tasks)
    measuring = MEASURE_SECONDS * (n_trained + n_floor) * threads
    total_h = (training + measuring) / 3600
    factor = 1.0
    if total_h > CPU_HOURS_LIMIT:
        factor = max(0.0, (CPU_HOURS_LIMIT * 3600 - measuring) / training)
    return {
        "trained_models": n_trained,
        "floor_models": n_floor,
        "training_cpu_hours": training / 3600,
        "measurement_cpu_hours": measuring / 3600,
        "projected_cpu_hours": total_h,
        "limit_cpu_hours": CPU_HOURS_LIMIT,
        "epoch_factor": factor,
        "epoch_scale": config.epoch_scale * factor,
    }


def time_only(
    config: Study3Config,
    *,
    device: str | torch.device | None = None,
    threads: int = 1,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The plan's cost check: on each task, every architecture's v1 model (seed of the first listed)
    is trained for one epoch and timed; no outcome is computed, and the weights are thrown away."""
    say = progress or (lambda _: None)
    dev = resolve_device(device)
    limits = limit_threads(dev, threads)
    v1 = study3_recipes(config)[0]
    per_image: dict[str, dict[str, float]] = {}
    sizes: dict[str, int] = {}
    try:
        for task in config.tasks:
            data = load_study3_task(task, config.seed)
            sizes[task.name] = len(data.train.y)
            per_image[task.name] = {}
            for arch in config.archs:
                spec = _training_spec(Study3Spec(task.name, arch, v1, config.seeds[0]))
                seconds = epoch_seconds(spec, data, dev, build)
                per_image[task.name][arch] = seconds / sizes[task.name]
                say(f"{arch} task {task.name}: {seconds:.1f} s for one epoch of {sizes[task.name]} images")
    finally:
        if limits is not None:
            limits.restore_original_limits()
    return {
        "device": str(dev),
        "threads": threads,
        "seconds_per_epoch_image": per_image,
        **projection(config, per_image, sizes, threads),
    }
