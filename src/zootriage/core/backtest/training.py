"""Train one model of the study, deterministically given its seed, resumable after every epoch.

Determinism: the initial weights come from ``torch.manual_seed(seed)`` (:func:`core.backtest.nets.build`);
epoch e shuffles and draws its augmentations from CPU generators seeded by (seed, e); the learning
rate is a pure function of the step (:func:`core.backtest.recipes.lr_factor`). The checkpoint written
after every epoch holds the model, the optimiser, the EMA weights and the losses, so a run killed at
any point and restarted continues exactly as an uninterrupted one would (up to the nondeterminism of
the device's kernels on a GPU).

A loss that becomes NaN or infinite stops training at once; the model is then *diverged* (the plan's
exclusion rule 1) and the checkpoint records it, so a rerun does not train it again.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from zootriage.core.backtest.nets import Classifier, build
from zootriage.core.backtest.recipes import ModelSpec, Recipe, lr_factor
from zootriage.core.backtest.splits import Images

EpochHook = Callable[[int, float], None]


@dataclass(frozen=True)
class Trained:
    """The weights to evaluate (the EMA weights for an EMA recipe), the last epoch's mean training
    loss and whether the loss became non-finite."""

    model: Classifier
    final_loss: float
    nan_loss: bool


def augment(x: torch.Tensor, padding: int, degrees: float, gen: torch.Generator) -> torch.Tensor:
    """Random crop after zero padding (an integer shift of at most ``padding`` pixels each way) and a
    rotation by an angle uniform in ±``degrees``, done together as one affine resampling."""
    n, _, h, w = x.shape
    angle = (torch.rand(n, generator=gen) * 2 - 1) * math.radians(degrees)
    shift = torch.randint(-padding, padding + 1, (n, 2), generator=gen).double()
    cos, sin = torch.cos(angle).double(), torch.sin(angle).double()
    theta = torch.stack(
        [
            torch.stack([cos, -sin, 2 * shift[:, 0] / w], dim=1),
            torch.stack([sin, cos, 2 * shift[:, 1] / h], dim=1),
        ],
        dim=1,
    ).to(x)
    grid = nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
    return nn.functional.grid_sample(x, grid, padding_mode="zeros", align_corners=False)


def _optimizer(recipe: Recipe, model: nn.Module) -> torch.optim.Optimizer:
    if recipe.optimizer == "sgd":
        return torch.optim.SGD(
            model.parameters(), lr=recipe.lr, momentum=0.9, weight_decay=recipe.weight_decay
        )
    return torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)


@torch.no_grad()
def _ema_update(ema: nn.Module, model: nn.Module, decay: float) -> None:
    """θ_ema ← d·θ_ema + (1 − d)·θ; BatchNorm statistics are copied (they are already averages)."""
    for p_ema, p in zip(ema.parameters(), model.parameters(), strict=True):
        p_ema.mul_(decay).add_(p.detach(), alpha=1 - decay)
    for b_ema, b in zip(ema.buffers(), model.buffers(), strict=True):
        b_ema.copy_(b)


def _save(path: Path, state: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def train_model(
    spec: ModelSpec,
    data: Images,
    n_classes: int,
    checkpoint: Path,
    device: torch.device,
    *,
    max_epochs: int | None = None,
    on_epoch: EpochHook | None = None,
    builder: Callable[[str, int, int], Classifier] = build,
) -> Trained:
    """Train (or resume) ``spec`` on ``data``; ``max_epochs`` stops early (the timing mode);
    ``builder(arch, n_classes, seed)`` makes the initial model (study 3 passes its own)."""
    recipe = spec.recipe
    if recipe is None:
        raise ValueError(f"{spec.name} is an untrained floor model")
    model = builder(spec.arch, n_classes, spec.seed).to(device)
    ema = copy.deepcopy(model).requires_grad_(False) if recipe.ema_decay is not None else None
    opt = _optimizer(recipe, model)
    start, last_loss, nan_loss = 0, math.nan, False
    if checkpoint.exists():
        saved = torch.load(checkpoint, map_location=device, weights_only=True)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        if ema is not None:
            ema.load_state_dict(saved["ema"])
        start, last_loss, nan_loss = int(saved["epoch"]), float(saved["loss"]), bool(saved["nan"])
    x, y = data.x.to(device), data.y.to(device)
    steps_per_epoch = math.ceil(len(y) / recipe.batch_size)
    stop = recipe.epochs if max_epochs is None else min(recipe.epochs, max_epochs)
    augmenting = recipe.crop_padding > 0 or recipe.rotation_degrees > 0
    for epoch in range(start, stop):
        if nan_loss:
            break
        model.train()
        epoch_seed = spec.seed * 10_007 + epoch
        order = torch.randperm(len(y), generator=torch.Generator().manual_seed(epoch_seed))
        aug_gen = torch.Generator().manual_seed(epoch_seed + 1_000_003)
        total = 0.0
        for i, batch in enumerate(order.split(recipe.batch_size)):
            for group in opt.param_groups:
                group["lr"] = recipe.lr * lr_factor(recipe, epoch * steps_per_epoch + i, steps_per_epoch)
            xb = x[batch.to(device)]
            if augmenting:
                xb = augment(xb, recipe.crop_padding, recipe.rotation_degrees, aug_gen)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(
                model(xb), y[batch.to(device)], label_smoothing=recipe.label_smoothing
            )
            if not torch.isfinite(loss):
                nan_loss = True
                break
            loss.backward()
            opt.step()
            if ema is not None and recipe.ema_decay is not None:
                _ema_update(ema, model, recipe.ema_decay)
            total += loss.item() * len(batch)
        last_loss = math.nan if nan_loss else total / len(y)
        state: dict[str, object] = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "epoch": recipe.epochs if nan_loss else epoch + 1,
            "loss": last_loss,
            "nan": nan_loss,
        }
        if ema is not None:
            state["ema"] = ema.state_dict()
        _save(checkpoint, state)
        if on_epoch is not None:
            on_epoch(epoch + 1, last_loss)
    if ema is not None:
        refresh_batch_norm(ema, x, recipe.batch_size)
    final = ema if ema is not None else model
    final.eval()
    return Trained(final, last_loss, nan_loss)


@torch.no_grad()
def refresh_batch_norm(model: nn.Module, x: torch.Tensor, batch_size: int) -> None:
    """BatchNorm statistics recomputed for ``model``'s own weights: one pass over the (unaugmented)
    training images, running means as plain averages (``torch.optim.swa_utils.update_bn``). Averaged
    weights θ_ema with the live model's statistics are a mismatched pair: with decay 0.999 over a short
    run θ_ema still lags the live weights by hundreds of steps, and the ResNets' v2 models evaluated at
    29 % train accuracy for a training loss of 0.43. A model without BatchNorm is left as it is."""
    torch.optim.swa_utils.update_bn(list(x.split(batch_size)), model)
