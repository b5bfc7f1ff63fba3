"""What the studies measure on one model: accuracies, collapse diagnostics, every marker, outcomes.

One record for both studies (:func:`measured`); each brings its GLUE settings and its outcomes:
study 2 the full probe (``probe``, primary) and the few-shot NCM probes; study 3 (docs/study/PLAN-3.md,
"Markers and rules scored") ``probe20`` (primary), the full probe at the same C and the NCM probes.

Geometry: one GLUE analysis per centring (one_vs_rest dichotomies, the task's points per class, the
study's n_t and repeats); every registered geometry marker is read from it through the registry, and
GLUE's regime diagnostic is recorded beside it. The diagnostic fields (``degenerate``, the fraction of
separable dichotomies, the fraction of draws whose N(t) reaches the rank) are read from the
``GlueResult`` when it carries them and recorded as ``None`` when it does not, so that this code runs
with and without them; exclusion rule 2 then only excludes models flagged ``degenerate = True``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from zootriage.core.backtest.config import Study3Config, StudyConfig, TaskName
from zootriage.core.backtest.nets import Classifier, features_and_logits
from zootriage.core.backtest.probes import ProbeSplit, few_shot_accuracy, few_shot_probe, linear_probe
from zootriage.core.backtest.splits import TaskData
from zootriage.core.glue import GlueResult, analyze
from zootriage.core.markers import compute_markers, list_markers
from zootriage.core.markers.registry import MarkerUndefined

ACTIVE = 1e-6
REGIME_FIELDS = ("degenerate", "separable_fraction", "saturated_fraction")
PRIMARY = "probe"
FULL = PRIMARY  # the full probe: study 3's secondary outcome
PRIMARY3 = "probe20"  # study 3's primary outcome


def fewshot_name(shots: int) -> str:
    return f"fewshot_{shots}"


def active_fraction(features: np.ndarray) -> float:
    """Fraction of penultimate units active (> 1e-6) on at least one ID test image; dead ReLU units
    are one face of a collapsed representation."""
    return float(np.mean((features > ACTIVE).any(axis=0)))


def regime(glue: GlueResult) -> dict[str, Any]:
    """GLUE's regime diagnostic (``core.glue_regime``); every field ``None`` when the analysis
    carries none."""
    found = glue.regime
    if found is None:
        return dict.fromkeys(REGIME_FIELDS)
    return {
        "degenerate": bool(found.degenerate),
        "separable_fraction": float(found.separable_fraction),
        "saturated_fraction": float(found.saturated_fraction),
    }


def geometry(
    features: np.ndarray,
    labels: np.ndarray,
    points_per_class: int,
    config: StudyConfig | Study3Config,
    device: torch.device,
) -> dict[str, dict[str, Any]]:
    """``{centring: {"markers": {name: value | None}, "regime": {...}}}`` for every centring of the
    study's GLUE settings, with the task's points per class."""
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


def probe_split(model: Classifier, data: TaskData, device: torch.device) -> ProbeSplit:
    feats = features_and_logits(model, data.ood.x, device)[0].double().numpy()
    labels = data.ood.y.numpy()
    return ProbeSplit(
        feats[data.probe_fit], labels[data.probe_fit], feats[data.probe_score], labels[data.probe_score]
    )


def outcomes(split: ProbeSplit, c: float, config: StudyConfig, device: torch.device) -> dict[str, float]:
    """The full linear probe at the task's C and the few-shot probes."""
    out = {PRIMARY: linear_probe(split, c, device)}
    for shots in config.probe.shots:
        out[fewshot_name(shots)] = few_shot_accuracy(split, shots, config.probe.episodes, config.seed, device)
    return out


def _accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    return float((logits.argmax(dim=1) == labels).double().mean())


def measure(
    model: Classifier,
    task: TaskName,
    data: TaskData,
    config: StudyConfig,
    c: float,
    device: torch.device,
) -> dict[str, Any]:
    """Accuracies, and unless the model diverged (train accuracy < 50 % or non-finite features),
    its collapse diagnostics, markers and outcomes."""
    return measured(
        model,
        data,
        device,
        lambda x, y: geometry(x, y, config.task(task).points_per_class, config, device),
        lambda split: outcomes(split, c, config, device),
    )


def measured(
    model: Classifier,
    data: TaskData,
    device: torch.device,
    geometry_of: Callable[[np.ndarray, np.ndarray], Any],
    outcomes_of: Callable[[ProbeSplit], dict[str, float]],
) -> dict[str, Any]:
    """The record of one model, shared by the studies (each brings its GLUE settings and outcomes):
    train and ID accuracy; unless it diverged, the active fraction, every non-geometry marker, the
    geometry of the ID test features and the outcomes of its probe split."""
    train_acc = _accuracy(features_and_logits(model, data.train.x, device)[1], data.train.y)
    feats, logits = features_and_logits(model, data.test.x, device)
    record: dict[str, Any] = {"train_acc": train_acc, "id_acc": _accuracy(logits, data.test.y)}
    x, y = feats.double().numpy(), data.test.y.numpy()
    if train_acc < 0.5 or not np.isfinite(x).all() or not np.isfinite(logits.numpy()).all():
        record["diverged"] = True
        return record
    names = [spec.name for spec in list_markers() if spec.group != "geometry"]
    values = compute_markers(x, y, logits.double().numpy(), names=names, device=device)
    record.update(
        diverged=False,
        active_fraction=active_fraction(x),
        markers={name: v.value for name, v in values.items()},
        geometry=geometry_of(x, y),
        outcomes=outcomes_of(probe_split(model, data, device)),
    )
    record["numerical_rank"] = record["markers"].get("numerical_rank")
    return record


def outcomes3(split: ProbeSplit, c: float, config: Study3Config, device: torch.device) -> dict[str, float]:
    """``probe20`` at the task's C, the full probe at the same C, and the few-shot NCM probes."""
    out = {
        PRIMARY3: few_shot_probe(split, c, config.probe.shots, config.probe.draws, device),
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
    its diagnostics, markers and outcomes (:func:`measured`)."""
    return measured(
        model,
        data,
        device,
        lambda x, y: geometry(x, y, points_per_class, config, device),
        lambda split: outcomes3(split, c, config, device),
    )
