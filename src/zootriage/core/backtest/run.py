"""Run the study: per task, the random-init floor and the probe's C, then every model of the grid.

Resumable at two levels: a model interrupted mid-training resumes from its last per-epoch checkpoint
(``checkpoints/<name>.pt``), and a finished model's record (``models/<name>.json``) is written
atomically (temporary file, then rename), so a record on disk is always complete and a rerun skips it.
The probe's C and the floors of a task are written the same way (``probe/<task>.json``) before any of
the task's models is measured, and are chosen on random-init models only.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel
from threadpoolctl import threadpool_limits

from zootriage.core.backtest.config import StudyConfig, TaskName
from zootriage.core.backtest.measure import measure, outcomes, probe_split
from zootriage.core.backtest.nets import build
from zootriage.core.backtest.probes import choose_task_c, task_c_scores
from zootriage.core.backtest.recipes import ModelSpec, floor_specs, model_specs, zoo_recipes
from zootriage.core.backtest.splits import TaskData, load_task
from zootriage.core.backtest.training import train_model
from zootriage.core.device import resolve_device

Progress = Callable[[str], None]
TASKS: tuple[TaskName, ...] = ("A", "B")
CPU_HOURS_BUDGET = 6.0


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON so that ``path`` is either absent or complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # shards may write the same file at once
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def study_id(config: StudyConfig) -> str:
    digest = hashlib.sha256(config.model_dump_json().encode()).hexdigest()[:12]
    return f"{config.name}-{digest}"


def check_state(config: BaseModel, out: Path) -> None:
    """Record a study's config in its output folder, or refuse a folder that holds another study's."""
    saved = out / "config.json"
    current = json.loads(config.model_dump_json())
    if saved.exists() and json.loads(saved.read_text()) != current:
        raise ValueError(f"{out} holds a study with another config; use a new output folder")
    write_json(saved, current)


def _probe_state(
    task: TaskName, data: TaskData, config: StudyConfig, out: Path, device: torch.device
) -> dict[str, Any]:
    path = out / "probe" / f"{task}.json"
    if path.exists():
        return dict(json.loads(path.read_text()))
    specs = [s for s in floor_specs(config) if s.task == task]
    splits = [probe_split(build(s.arch, data.n_classes, s.seed), data, device) for s in specs]
    scores = task_c_scores(
        splits, config.probe.c_grid, val_fraction=config.probe.val_fraction, seed=config.seed, device=device
    )
    c = choose_task_c(scores)
    floors = [
        {
            "name": s.name,
            "task": task,
            "arch": s.arch,
            "seed": s.seed,
            "outcomes": outcomes(split, c, config, device),
        }
        for s, split in zip(specs, splits, strict=True)
    ]
    state = {
        "c": c,
        "validation_accuracy": {str(k): v for k, v in scores.items()},
        "floors": floors,
        "n_scored": int(data.probe_score.size),
    }
    write_json(path, state)
    return state


def _record(
    spec: ModelSpec,
    data: TaskData,
    config: StudyConfig,
    c: float,
    out: Path,
    device: torch.device,
    say: Progress,
) -> dict[str, Any]:
    trained = train_model(
        spec,
        data.train,
        data.n_classes,
        out / "checkpoints" / f"{spec.name}.pt",
        device,
        on_epoch=lambda e, loss: say(f"  {spec.name} epoch {e} loss {loss:.4f}"),
    )
    record: dict[str, Any] = {
        "name": spec.name,
        "task": spec.task,
        "arch": spec.arch,
        "recipe": spec.recipe_name,
        "seed": spec.seed,
        "arm": spec.arm,
        "final_loss": None if np.isnan(trained.final_loss) else trained.final_loss,
    }
    if trained.nan_loss:
        record.update(train_acc=None, id_acc=None, diverged=True)
        return record
    record.update(measure(trained.model, spec.task, data, config, c, device))
    return record


def limit_threads(device: torch.device, threads: int) -> threadpool_limits | None:
    """On the CPU, use ``threads`` threads for torch and for numpy's BLAS (the plan: 1–2 threads; an
    unlimited BLAS on a shared machine runs small factorisations a hundred times slower)."""
    if device.type != "cpu":
        return None
    torch.set_num_threads(threads)
    return threadpool_limits(threads)


def run_study(
    config: StudyConfig,
    out: Path,
    *,
    device: str | torch.device | None = None,
    threads: int = 2,
    progress: Progress | None = None,
    after_model: Callable[[str], None] | None = None,
    shard: tuple[int, int] | None = None,
) -> dict[str, Any] | None:
    """Train and measure every model not already done under ``out``.

    Returns ``{"models", "floors", "probe", "splits", "n_scored"}``. ``after_model(name)`` is called
    after each newly written record (tests use it to interrupt a run). With ``shard=(k, n)`` only the
    models whose position in :func:`model_specs` is k − 1 modulo n are trained, and None is returned:
    n processes with k = 1 … n share one ``out`` (each record is written atomically, and the probe
    state, computed the same way by each, too); a run without a shard then gathers every record.
    """
    if shard is not None and not 1 <= shard[0] <= shard[1]:
        raise ValueError(f"shard must be k/n with 1 <= k <= n, got {shard[0]}/{shard[1]}")
    dev = resolve_device(device)
    limits = limit_threads(dev, threads)
    try:
        return _run(config, out, dev, progress or (lambda _: None), after_model, shard)
    finally:
        if limits is not None:
            limits.restore_original_limits()


def _run(
    config: StudyConfig,
    out: Path,
    dev: torch.device,
    say: Progress,
    after_model: Callable[[str], None] | None,
    shard: tuple[int, int] | None,
) -> dict[str, Any] | None:
    check_state(config, out)
    specs = model_specs(config)
    models, floors, probe, splits, n_scored = [], [], {}, {}, {}
    done = 0
    for task in TASKS:
        data = load_task(task, config)
        splits[task] = data.splits_record()
        state = _probe_state(task, data, config, out, dev)
        probe[task] = {"c": state["c"], "validation_accuracy": state["validation_accuracy"]}
        floors += state["floors"]
        n_scored[task] = state["n_scored"]
        for index, spec in enumerate(specs):
            if spec.task != task:
                continue
            done += 1
            path = out / "models" / f"{spec.name}.json"
            if shard is not None and index % shard[1] != shard[0] - 1:
                continue
            if not path.exists():
                say(f"[{done}/{len(specs)}] {spec.name}")
                write_json(path, _record(spec, data, config, state["c"], out, dev, say))
                if after_model is not None:
                    after_model(spec.name)
            models.append(json.loads(path.read_text()))
    if shard is not None:
        return None
    return {"models": models, "floors": floors, "probe": probe, "splits": splits, "n_scored": n_scored}


def time_only(
    config: StudyConfig,
    *,
    device: str | torch.device | None = None,
    threads: int = 1,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The plan's cost check: one model per architecture trained one epoch (the grid's first recipe,
    on the architecture's first task); no outcome is computed. The projection scales each model's
    epochs by its task's training-set size at the measured seconds per image of its architecture (the
    first recipe has the smallest batch, so this errs on the slow side) and excludes measurement."""
    say = progress or (lambda _: None)
    dev = resolve_device(device)
    limits = limit_threads(dev, threads)
    recipe = zoo_recipes(config)[0]
    per_image: dict[str, float] = {}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for task in TASKS:
            data = load_task(task, config)
            sizes[task] = len(data.train.y)
            for arch in config.task(task).archs:
                if arch in per_image:
                    continue
                spec = ModelSpec(task, arch, recipe, config.seeds[0], "zoo")
                start = time.perf_counter()
                train_model(
                    spec, data.train, data.n_classes, Path(tmp) / f"{spec.name}.pt", dev, max_epochs=1
                )
                seconds = time.perf_counter() - start
                per_image[arch] = seconds / sizes[task]
                say(f"{arch}: {seconds:.1f} s for one epoch of {sizes[task]} images (task {task})")
    if limits is not None:
        limits.restore_original_limits()
    total = sum(
        s.recipe.epochs * sizes[s.task] * per_image[s.arch]
        for s in model_specs(config)
        if s.recipe is not None
    )
    hours = total / 3600
    cpu_hours = hours * threads if dev.type == "cpu" else None
    scale = min(1.0, CPU_HOURS_BUDGET / cpu_hours) if cpu_hours else 1.0
    return {
        "device": str(dev),
        "threads": threads,
        "seconds_per_epoch_image": per_image,
        "projected_training_hours": hours,
        "projected_cpu_hours": cpu_hours,
        "epoch_scale": scale,
    }
