"""What study 3 measures on one model (docs/study/PLAN-3.md, "Markers and rules scored").

The registered study's measurement (:mod:`core.backtest.measure`) with study 3's settings: train and
ID test accuracy, active-unit fraction, every registered marker on the ID test features, GLUE per
centring (one_vs_rest, the task's points per class, n_t, repeats) with its regime diagnostic, and the
outcomes: ``probe20`` (primary), the full linear probe and the nearest-class-mean few-shot probes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from zootriage.core.backtest.measure import fewshot_name, measured, regime
from zootriage.core.backtest.nets import Classifier
from zootriage.core.backtest.probes import few_shot_accuracy, linear_probe
from zootriage.core.backtest.splits import TaskData
from zootriage.core.backtest.study3_config import Study3Config
from zootriage.core.backtest.study3_probe import few_shot_probe
from zootriage.core.glue import analyze
from zootriage.core.markers import list_markers
from zootriage.core.markers.registry import MarkerUndefined
from zootriage.core.study.probe import ProbeSplit

PRIMARY = "probe20"
FULL = "probe"


def geometry(
    features: np.ndarray,
    labels: np.ndarray,
    points_per_class: int,
    config: Study3Config,
    device: torch.device,
) -> dict[str, dict[str, Any]]:
    """``{centring: {"markers": {name: value | None}, "regime": {...}}}`` for every centring."""
    out: dict[str, dict[str, Any]] = {}
    for centering in config.markers.centerings:
        glue = analyze(
            features,
            labels,
            n_t=config.markers.n_t,
            seed=config.seed,
            centering=centering,
            dichotomy="one_vs_rest",
            points_per_class=points_per_class,
            repeats=config.markers.repeats,
            device=device,
        )
        values: dict[str, float | None] = {}
        for spec in list_markers(group="geometry"):
            try:
                values[spec.name] = float(spec.fn(glue=glue))
            except MarkerUndefined:
                values[spec.name] = None
        out[centering] = {"markers": values, "regime": regime(glue)}
    return out


def outcomes(split: ProbeSplit, c: float, config: Study3Config, device: torch.device) -> dict[str, float]:
    """``probe20`` at the task's C, the full probe at the same C, and the few-shot NCM probes."""
    out = {
        PRIMARY: few_shot_probe(split, c, config.probe.shots, config.probe.draws, device),
        FULL: linear_probe(split, c, device),
    }
    for shots in config.probe.fewshot:
        out[fewshot_name(shots)] = few_shot_accuracy(split, shots, config.probe.episodes, config.seed, device)
    return out


def measure3(
    model: Classifier,
    data: TaskData,
    points_per_class: int,
    config: Study3Config,
    c: float,
    device: torch.device,
) -> dict[str, Any]:
    """Accuracies, and unless the model diverged (train accuracy < 50 % or non-finite features),
    its diagnostics, markers and outcomes (study 2's record, :func:`core.backtest.measure.measured`)."""
    return measured(
        model, data, device,
        lambda x, y: geometry(x, y, points_per_class, config, device),
        lambda split: outcomes(split, c, config, device),
    )
