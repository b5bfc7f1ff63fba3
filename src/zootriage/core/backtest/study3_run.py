"""Run study 3 (docs/study/PLAN-3.md, "Running"): per task, the random-init floor and the probe's C,
then every model; and the plan's timing-only cost check.

Resumable as the registered study (:mod:`core.backtest.run`): a model interrupted mid-training resumes
from its per-epoch checkpoint (``checkpoints/<name>.pt``), a finished model's record
(``models/<name>.json``) is written atomically and a rerun skips it, and a task's C and floors
(``probe/<task>.json``) are computed on random-init models before any of its models is measured.
``shard=(k, n)`` trains the models whose position in :func:`study3_recipes.model_specs` is k − 1
modulo n. Records carry the device and the model's wall and CPU seconds (the budget log).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from zootriage.core.backtest.config import TaskName
from zootriage.core.backtest.measure import probe_split
from zootriage.core.backtest.recipes import ModelSpec
from zootriage.core.backtest.run import check_state, limit_threads, write_json
from zootriage.core.backtest.splits import TaskData
from zootriage.core.backtest.study3_config import Study3Config, TaskSpec
from zootriage.core.backtest.study3_measure import PRIMARY, measure3, outcomes
from zootriage.core.backtest.study3_models import build
from zootriage.core.backtest.study3_probe import choose_c
from zootriage.core.backtest.study3_recipes import (
    Study3Spec,
    factors,
    floor_specs,
    model_specs,
    recipe_parts,
    study3_recipes,
)
from zootriage.core.backtest.study3_tasks import load_study3_task
from zootriage.core.backtest.training import train_model
from zootriage.core.device import resolve_device

Progress = Callable[[str], None]
TIMING_KEYS = ("wall_seconds", "cpu_seconds")
CPU_HOURS_LIMIT = 7.0
MEASURE_SECONDS = 10.0
AUGMENT_OVERHEAD = 0.10


def _probe_state(
    task: TaskSpec, data: TaskData, config: Study3Config, out: Path, device: torch.device
) -> dict[str, Any]:
    path = out / "probe" / f"{task.name}.json"
    if path.exists():
        return dict(json.loads(path.read_text()))
    specs = floor_specs(config, task.name)
    n_classes = len(task.train.classes)
    splits = [probe_split(build(s.arch, n_classes, s.seed), data, device) for s in specs]
    p = config.probe
    c, scores = choose_c(
        splits, p.c_grid, shots=p.shots, n_draws=p.draws, val_fraction=p.val_fraction, device=device
    )
    floors = [
        {
            "name": s.name,
            "task": task.name,
            "arch": s.arch,
            "seed": s.seed,
            "outcomes": outcomes(split, c, config, device),
        }
        for s, split in zip(specs, splits, strict=True)
    ]
    state = {"c": c, "validation_accuracy": {str(k): v for k, v in scores.items()}, "floors": floors}
    write_json(path, state)
    return state


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
    """Train and measure every model not already done under ``out``.

    Returns ``{"models", "floors", "probe", "splits"}``, or None for a shard (a run without a shard
    then gathers every record). ``after_model(name)`` runs after each newly written record.
    """
    if shard is not None and not 1 <= shard[0] <= shard[1]:
        raise ValueError(f"shard must be k/n with 1 <= k <= n, got {shard[0]}/{shard[1]}")
    dev = resolve_device(device)
    limits = limit_threads(dev, threads)
    say = progress or (lambda _: None)
    try:
        check_state(config, out)
        specs = model_specs(config)
        models, floors, probe, splits = [], [], {}, {}
        for task in config.tasks:
            data = load_study3_task(task, config.seed)
            splits[task.name] = data.splits_record()
            state = _probe_state(task, data, config, out, dev)
            probe[task.name] = {"c": state["c"], "validation_accuracy": state["validation_accuracy"]}
            floors += state["floors"]
            for index, spec in enumerate(specs):
                if spec.task != task.name or (shard is not None and index % shard[1] != shard[0] - 1):
                    continue
                path = out / "models" / f"{spec.name}.json"
                if not path.exists():
                    say(f"[{index + 1}/{len(specs)}] {spec.name}")
                    write_json(path, _record(spec, task, data, config, state["c"], out, dev, say))
                    if after_model is not None:
                        after_model(spec.name)
                models.append(json.loads(path.read_text()))
        if shard is not None:
            return None
        return {"models": models, "floors": floors, "probe": probe, "splits": splits, "primary": PRIMARY}
    finally:
        if limits is not None:
            limits.restore_original_limits()


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
        with tempfile.TemporaryDirectory() as tmp:
            for task in config.tasks:
                data = load_study3_task(task, config.seed)
                sizes[task.name] = len(data.train.y)
                per_image[task.name] = {}
                for arch in config.archs:
                    spec = Study3Spec(task.name, arch, v1, config.seeds[0])
                    start = time.perf_counter()
                    train_model(
                        _training_spec(spec), data.train, len(task.train.classes),
                        Path(tmp) / f"{spec.name}.pt", dev, max_epochs=1, builder=build,
                    )  # fmt: skip
                    seconds = time.perf_counter() - start
                    per_image[task.name][arch] = seconds / sizes[task.name]
                    say(
                        f"{arch} task {task.name}: {seconds:.1f} s for one epoch of {sizes[task.name]} images"
                    )
    finally:
        if limits is not None:
            limits.restore_original_limits()
    return {
        "device": str(dev),
        "threads": threads,
        "seconds_per_epoch_image": per_image,
        **projection(config, per_image, sizes, threads),
    }
