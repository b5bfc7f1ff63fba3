"""Run a study: per task, the random-init floor and the probe's C, then every model of the zoo.

One runner for both studies (:func:`run_zoo`, the shard loop); each study is a :class:`Zoo` (study 2:
:func:`run_study` here; study 3: ``core.backtest.study3_run.run_study3``).

Resumable at two levels: a model interrupted mid-training resumes from its last per-epoch checkpoint
(``checkpoints/<name>.pt``), and a finished model's record (``models/<name>.json``) is written
atomically (temporary file, then rename), so a record on disk is always complete and a rerun skips it.
The probe's C and the floors of a task are written the same way (``probe/<task>.json``) before any of
the task's models is measured, and are chosen on random-init models only. They are computed once per
study folder: shards started together take turns on an exclusive lock (:func:`folder_lock`), and the
one that finds the file written reads it instead of computing its own.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
import torch
from pydantic import BaseModel
from threadpoolctl import threadpool_limits

from zootriage.core.backtest.config import StudyConfig, TaskName
from zootriage.core.backtest.measure import measure, outcomes, probe_split
from zootriage.core.backtest.nets import Classifier, build
from zootriage.core.backtest.probes import ProbeSplit, choose_task_c, task_c_scores
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


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the folder itself (made if missing) for the ``with`` block: other
    processes, and other threads with their own descriptor, wait until it is released. The lock is on
    the folder's descriptor, so it adds no file to the folder; the kernel releases it if the holder
    dies."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


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


class Spec(Protocol):
    """A model of a study's zoo (study 2's :class:`ModelSpec`, study 3's ``Study3Spec``)."""

    @property
    def task(self) -> str: ...
    @property
    def arch(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def name(self) -> str: ...


Builder = Callable[[str, int, int], Classifier]
ChooseC = Callable[[list[ProbeSplit]], tuple[float, dict[float, float]]]


def probe_state(
    path: Path,
    task: str,
    floors: Sequence[Spec],
    data: TaskData,
    device: torch.device,
    *,
    builder: Builder,
    choose: ChooseC,
    outcomes_of: Callable[[ProbeSplit, float], dict[str, float]],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A task's probe C and random-init floors (``probe/<task>.json``), computed on the untrained
    ``floors`` models only (``choose`` picks C from their probe splits) and written before any of the
    task's models is measured; read back when already there.

    Computed once per folder: compute-if-missing runs under :func:`folder_lock` on ``path``'s folder,
    so of shards starting together one computes and writes the file (atomically) while the others wait,
    then read it. A file already there is complete (:func:`write_json`) and is read without the lock."""
    if path.exists():
        return dict(json.loads(path.read_text()))
    with folder_lock(path.parent):
        if path.exists():  # another shard wrote it while this one waited
            return dict(json.loads(path.read_text()))
        splits = [probe_split(builder(s.arch, data.n_classes, s.seed), data, device) for s in floors]
        c, scores = choose(splits)
        records = [
            {"name": s.name, "task": task, "arch": s.arch, "seed": s.seed, "outcomes": outcomes_of(split, c)}
            for s, split in zip(floors, splits, strict=True)
        ]
        state = {"c": c, "validation_accuracy": {str(k): v for k, v in scores.items()}, "floors": records}
        state.update(extra or {})
        write_json(path, state)
    return state


def _probe_state(
    task: TaskName, data: TaskData, config: StudyConfig, out: Path, device: torch.device
) -> dict[str, Any]:
    def choose(splits: list[ProbeSplit]) -> tuple[float, dict[float, float]]:
        p = config.probe
        scores = task_c_scores(splits, p.c_grid, val_fraction=p.val_fraction, seed=config.seed, device=device)
        return choose_task_c(scores), scores

    return probe_state(
        out / "probe" / f"{task}.json", task, [s for s in floor_specs(config) if s.task == task], data,
        device, builder=build, choose=choose,
        outcomes_of=lambda split, c: outcomes(split, c, config, device),
        extra={"n_scored": int(data.probe_score.size)},
    )  # fmt: skip


def _record(
    spec: ModelSpec,
    data: TaskData,
    config: StudyConfig,
    c: float,
    out: Path,
    device: torch.device,
    say: Progress,
) -> dict[str, Any]:
    """One model's record (``models/<name>.json``): trained (or resumed) and measured."""
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


@dataclass(frozen=True)
class Zoo:
    """What a study brings to the shared runner (:func:`run_zoo`): its config (recorded as
    ``config.json``), its tasks, how a task's images are drawn, its trained models in shard order, a
    task's probe state (:func:`probe_state`) and a model's record."""

    config: BaseModel
    tasks: Sequence[str]
    load: Callable[[str], TaskData]
    specs: Sequence[Spec]
    probe: Callable[[str, TaskData, Path, torch.device], dict[str, Any]]
    record: Callable[[Any, TaskData, float, Path, torch.device, Progress], dict[str, Any]]


def run_zoo(
    zoo: Zoo,
    out: Path,
    *,
    device: str | torch.device | None,
    threads: int,
    progress: Progress | None,
    after_model: Callable[[str], None] | None,
    shard: tuple[int, int] | None,
) -> dict[str, Any] | None:
    """Train and measure every model of ``zoo`` not already done under ``out``: the shard loop.

    Returns ``{"models", "floors", "probe", "splits", "states"}`` (``states``: each task's probe state).
    ``after_model(name)`` is called after each newly written record (tests use it to interrupt a
    run). With ``shard=(k, n)`` only the models whose position in ``zoo.specs`` is k − 1 modulo n are
    trained, and None is returned: n processes with k = 1 … n share one ``out`` (each record is
    written atomically; a task's probe state is computed by one of them before any splits the task's
    models, and read by the others, :func:`probe_state`); a run without a shard then gathers every
    record.
    """
    if shard is not None and not 1 <= shard[0] <= shard[1]:
        raise ValueError(f"shard must be k/n with 1 <= k <= n, got {shard[0]}/{shard[1]}")
    dev = resolve_device(device)
    limits = limit_threads(dev, threads)
    say = progress or (lambda _: None)
    try:
        check_state(zoo.config, out)
        models, floors, probe, splits, states = [], [], {}, {}, {}
        for task in zoo.tasks:
            data = zoo.load(task)
            splits[task] = data.splits_record()
            state = states[task] = zoo.probe(task, data, out, dev)
            probe[task] = {"c": state["c"], "validation_accuracy": state["validation_accuracy"]}
            floors += state["floors"]
            for index, spec in enumerate(zoo.specs):
                if spec.task != task or (shard is not None and index % shard[1] != shard[0] - 1):
                    continue
                path = out / "models" / f"{spec.name}.json"
                if not path.exists():
                    say(f"[{index + 1}/{len(zoo.specs)}] {spec.name}")
                    write_json(path, zoo.record(spec, data, state["c"], out, dev, say))
                    if after_model is not None:
                        after_model(spec.name)
                models.append(json.loads(path.read_text()))
        if shard is not None:
            return None
        return {"models": models, "floors": floors, "probe": probe, "splits": splits, "states": states}
    finally:
        if limits is not None:
            limits.restore_original_limits()


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
    """Study 2 through :func:`run_zoo`: ``{"models", "floors", "probe", "splits", "n_scored"}``, or
    None for a shard."""
    zoo = Zoo(
        config, TASKS, lambda task: load_task(cast(TaskName, task), config), model_specs(config),
        lambda task, data, out_, dev: _probe_state(cast(TaskName, task), data, config, out_, dev),
        lambda spec, data, c, out_, dev, say: _record(spec, data, config, c, out_, dev, say),
    )  # fmt: skip
    run = run_zoo(zoo, out, device=device, threads=threads, progress=progress, after_model=after_model,
                  shard=shard)  # fmt: skip
    if run is None:
        return None
    states = run.pop("states")
    return {**run, "n_scored": {task: state["n_scored"] for task, state in states.items()}}


def epoch_seconds(spec: ModelSpec, data: TaskData, device: torch.device, builder: Builder = build) -> float:
    """Wall seconds of one training epoch of ``spec`` (the cost checks); the weights are thrown away."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        checkpoint = Path(tmp) / f"{spec.name}.pt"
        train_model(spec, data.train, data.n_classes, checkpoint, device, max_epochs=1, builder=builder)
        return time.perf_counter() - start


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
    for task in TASKS:
        data = load_task(task, config)
        sizes[task] = len(data.train.y)
        for arch in config.task(task).archs:
            if arch in per_image:
                continue
            seconds = epoch_seconds(ModelSpec(task, arch, recipe, config.seeds[0], "zoo"), data, dev)
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
