"""The back-test study: train a zoo on MNIST, measure markers on ID data and transfer out of it.

For every model of the grid (``StudyConfig.specs``): train from scratch (checkpointed per epoch), keep
it when train accuracy ≥ the threshold and ID test accuracy lies in the band (so ID accuracy is nearly
equal across kept models, as in the paper), then on the kept ones compute

- every registered non-geometry marker on the ID marker sample (features and logits);
- GLUE geometry under each (dichotomy, centering) variant, named ``marker[dichotomy,centering]``;
  the plain names (``dimension``, ``utilization``, …) are the default variant (one_vs_rest, none);
- outcomes: the Animal-MNIST linear-probe accuracy (10 classes the model never saw) and the model's
  own accuracy on each corruption of the ID test sample.

Each model's result is written to ``models/<name>.json`` as soon as it is known, so a rerun skips it;
the probe's C is chosen once, on the first kept model, and stored in ``probe.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zootriage.core.device import resolve_device
from zootriage.core.glue import analyze
from zootriage.core.markers import compute_markers, list_markers
from zootriage.core.study.config import StudyConfig
from zootriage.core.study.datasets import load
from zootriage.core.study.probe import ProbeSplit, choose_c, probe_accuracy, stratified_split
from zootriage.core.study.shifts import corrupt
from zootriage.core.study.train import Classifier, TrainSpec, build, forward, train

OOD_SET = "animal-mnist"
GEOMETRY = ("capacity", "dimension", "radius", "utilization")
Progress = Callable[[str], None]


@dataclass(frozen=True)
class StudyData:
    """Every image set the study reads, loaded once."""

    train: tuple[torch.Tensor, torch.Tensor]
    test: tuple[torch.Tensor, torch.Tensor]
    markers: tuple[torch.Tensor, torch.Tensor]
    shift: tuple[torch.Tensor, torch.Tensor]
    ood: tuple[torch.Tensor, torch.Tensor]
    ood_split: tuple[np.ndarray, np.ndarray]


def load_data(config: StudyConfig) -> StudyData:
    ood = load(OOD_SET, "all", config.ood_per_class, config.seed)
    return StudyData(
        train=load("mnist", "train", config.train_per_class, config.seed),
        test=load("mnist", "test", None, config.seed),
        markers=load("mnist", "test", config.marker_per_class, config.seed),
        shift=load("mnist", "test", config.shift_per_class, config.seed + 1),
        ood=ood,
        ood_split=stratified_split(ood[1].numpy(), config.ood_test_fraction, config.seed),
    )


def variant_name(marker: str, dichotomy: str, centering: str) -> str:
    return f"{marker}[{dichotomy},{centering}]"


def _accuracy(model: Classifier, data: tuple[torch.Tensor, torch.Tensor], device: torch.device) -> float:
    _, logits = forward(model, data[0], device=device)
    return float((logits.argmax(dim=1) == data[1]).float().mean())


def _probe_split(model: Classifier, data: StudyData, device: torch.device) -> ProbeSplit:
    feats = forward(model, data.ood[0], device=device)[0].double().numpy()
    labels = data.ood[1].numpy()
    train_idx, test_idx = data.ood_split
    return ProbeSplit(feats[train_idx], labels[train_idx], feats[test_idx], labels[test_idx])


def geometry_markers(
    features: np.ndarray, labels: np.ndarray, config: StudyConfig, device: torch.device
) -> dict[str, float]:
    """GLUE markers under every configured variant; the default variant also under the plain names."""
    out: dict[str, float] = {}
    for dichotomy, centering in config.variants:
        glue = analyze(
            features,
            labels,
            n_t=config.n_t,
            seed=config.seed,
            centering=centering,
            dichotomy=dichotomy,
            points_per_class=config.points_per_class,
            repeats=config.repeats,
            device=device,
        )
        for name in GEOMETRY:
            value = float(getattr(glue, name))
            out[variant_name(name, dichotomy, centering)] = value
            if (dichotomy, centering) == ("one_vs_rest", "none"):
                out[name] = value
    return out


def model_markers(
    model: Classifier, data: StudyData, config: StudyConfig, device: torch.device
) -> dict[str, float | None]:
    """Every registered non-geometry marker (features and logits of the ID marker sample) and the GLUE
    capacity, D_eff, R_eff and Ψ_eff of every variant; ``None`` where a marker is not applicable."""
    feats, logits = forward(model, data.markers[0], device=device)
    x, y = feats.double().numpy(), data.markers[1].numpy()
    names = [spec.name for spec in list_markers() if spec.group != "geometry"]
    values = compute_markers(x, y, logits.double().numpy(), names=names, device=device)
    markers: dict[str, float | None] = {name: v.value for name, v in values.items()}
    markers.update(geometry_markers(x, y, config, device))
    return markers


def model_outcomes(
    model: Classifier, data: StudyData, config: StudyConfig, c: float, device: torch.device
) -> dict[str, float]:
    """The OOD probe accuracy on Animal-MNIST at the study's fixed C, and the model's own accuracy on
    each corruption of the shift sample."""
    outcomes = {OOD_SET: probe_accuracy(_probe_split(model, data, device), c, device=device)}
    images, labels = data.shift
    for kind, severity in sorted(config.shifts.items()):
        shifted = corrupt(images, kind, severity, seed=config.seed)
        outcomes[kind] = _accuracy(model, (shifted, labels), device)
    return outcomes


def _probe_c(
    path: Path, model: Classifier, data: StudyData, config: StudyConfig, name: str, device: torch.device
) -> float:
    if path.exists():
        return float(json.loads(path.read_text())["c"])
    c, scores = choose_c(_probe_split(model, data, device), config.c_grid, seed=config.seed, device=device)
    path.write_text(
        json.dumps({"c": c, "validation_accuracy": {str(k): v for k, v in scores.items()}, "chosen_on": name})
    )
    return c


def _evaluate(
    spec: TrainSpec, data: StudyData, config: StudyConfig, out: Path, device: torch.device, say: Progress
) -> dict[str, Any]:
    model = train(
        spec,
        *data.train,
        out / "checkpoints" / f"{spec.name}.pt",
        device=device,
        on_epoch=lambda e, loss: say(f"  {spec.name} epoch {e}/{spec.epochs} loss {loss:.4f}"),
    )
    train_acc, test_acc = _accuracy(model, data.train, device), _accuracy(model, data.test, device)
    lo, hi = config.id_acc_band
    reason = None
    if train_acc < config.train_acc_min:
        reason = f"train accuracy {train_acc:.4f} < {config.train_acc_min}"
    elif not lo <= test_acc <= hi:
        reason = f"ID test accuracy {test_acc:.4f} outside [{lo}, {hi}]"
    result: dict[str, Any] = {
        "name": spec.name,
        "arch": spec.arch,
        "optimizer": spec.optimizer,
        "lr": spec.lr,
        "weight_decay": spec.weight_decay,
        "seed": spec.seed,
        "train_acc": train_acc,
        "id_test_acc": test_acc,
        "kept": reason is None,
        "dropped_because": reason,
    }
    if reason is None:
        c = _probe_c(out / "probe.json", model, data, config, spec.name, device)
        result["markers"] = model_markers(model, data, config, device)
        result["outcomes"] = model_outcomes(model, data, config, c, device)
    return result


def random_init_baselines(
    data: StudyData, config: StudyConfig, c: float, device: torch.device
) -> dict[str, float]:
    """Probe accuracy of each architecture at its seeded random initialisation: the floor to beat."""
    out = {}
    for arch in config.archs:
        model = build(arch, config.seed).eval()
        out[arch] = probe_accuracy(_probe_split(model, data, device), c, device=device)
    return out


def run_study(
    config: StudyConfig,
    out: Path,
    *,
    device: str | torch.device | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Train and evaluate every model not already done under ``out``; return all per-model results.

    Returns ``{"config", "models", "probe", "random_init_probe"}``; ``probe`` is ``None`` when no model
    was kept (then nothing was probed).
    """
    say = progress or (lambda _: None)
    dev = resolve_device(device)
    (out / "models").mkdir(parents=True, exist_ok=True)
    saved = out / "config.json"
    if saved.exists() and json.loads(saved.read_text()) != json.loads(json.dumps(config.to_dict())):
        raise ValueError(f"{out} holds a study with another config; use a new output folder")
    saved.write_text(json.dumps(config.to_dict(), indent=2))
    data = load_data(config)
    specs = config.specs()
    models = []
    for i, spec in enumerate(specs, 1):
        path = out / "models" / f"{spec.name}.json"
        if path.exists():
            say(f"[{i}/{len(specs)}] {spec.name}: done before, skipped")
        else:
            resumed = (out / "checkpoints" / f"{spec.name}.pt").exists()
            say(
                f"[{i}/{len(specs)}] {spec.name}: {'resuming from its checkpoint' if resumed else 'training'}"
            )
            result = _evaluate(spec, data, config, out, dev, say)
            path.write_text(json.dumps(result, indent=2))
            kept = "kept" if result["kept"] else f"dropped ({result['dropped_because']})"
            accuracy = f"train {result['train_acc']:.4f} test {result['id_test_acc']:.4f}"
            say(f"[{i}/{len(specs)}] {spec.name}: {accuracy} {kept}")
        models.append(json.loads(path.read_text()))
    probe_path = out / "probe.json"
    probe = json.loads(probe_path.read_text()) if probe_path.exists() else None
    baselines = random_init_baselines(data, config, probe["c"], dev) if probe else {}
    return {"config": config.to_dict(), "models": models, "probe": probe, "random_init_probe": baselines}
