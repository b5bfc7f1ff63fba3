"""Train the study's zoo from scratch: small MNIST classifiers with a penultimate feature layer.

Training is deterministic given the seed: the initial weights come from ``torch.manual_seed(seed)``
and epoch e shuffles with a generator seeded by (seed, e), so an interrupted run that resumes from its
last per-epoch checkpoint continues exactly as an uninterrupted one would (up to the nondeterminism of
the device's kernels).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from zootriage.core.device import resolve_device

PENULTIMATE = 64


class Classifier(nn.Module):
    """``body`` maps images to penultimate features (ReLU outputs), ``head`` maps them to logits."""

    def __init__(self, body: nn.Module, n_classes: int = 10) -> None:
        super().__init__()
        self.body = body
        self.head = nn.Linear(PENULTIMATE, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, PENULTIMATE), nn.ReLU())


def _cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 7 * 7, PENULTIMATE),
        nn.ReLU(),
    )


ARCHITECTURES: dict[str, Callable[[], nn.Module]] = {"mlp": _mlp, "cnn": _cnn}
OPTIMIZERS: tuple[str, ...] = ("sgd", "adamw")


@dataclass(frozen=True)
class TrainSpec:
    """One zoo member: architecture, optimiser (SGD with momentum 0.9, or AdamW), learning rate,
    weight decay, seed, epochs (cosine-annealed learning rate) and batch size."""

    arch: str
    optimizer: str
    lr: float
    weight_decay: float
    seed: int
    epochs: int
    batch_size: int

    def __post_init__(self) -> None:
        if self.arch not in ARCHITECTURES:
            raise ValueError(f"unknown architecture {self.arch!r}; known: {sorted(ARCHITECTURES)}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; known: {OPTIMIZERS}")
        if not (self.lr > 0 and self.weight_decay >= 0 and self.epochs >= 1 and self.batch_size >= 1):
            raise ValueError(f"need lr > 0, weight_decay >= 0, epochs >= 1, batch_size >= 1: {self}")

    @property
    def name(self) -> str:
        return f"{self.arch}-{self.optimizer}-lr{self.lr:g}-wd{self.weight_decay:g}-s{self.seed}"


def build(arch: str, seed: int) -> Classifier:
    """A freshly initialised ``arch`` model, its weights drawn from ``torch.manual_seed(seed)``."""
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}; known: {sorted(ARCHITECTURES)}")
    torch.manual_seed(seed)
    return Classifier(ARCHITECTURES[arch]())


def _optimizer(spec: TrainSpec, model: nn.Module) -> torch.optim.Optimizer:
    if spec.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=spec.lr, momentum=0.9, weight_decay=spec.weight_decay)
    return torch.optim.AdamW(model.parameters(), lr=spec.lr, weight_decay=spec.weight_decay)


def train(
    spec: TrainSpec,
    images: torch.Tensor,
    labels: torch.Tensor,
    checkpoint: Path,
    *,
    device: str | torch.device | None = None,
    on_epoch: Callable[[int, float], None] | None = None,
) -> Classifier:
    """Train (or resume training of) ``spec`` on ``images`` (n, 1, 28, 28) and ``labels``.

    After every epoch the model, optimiser, scheduler and epoch are saved to ``checkpoint``; a
    checkpoint already there is resumed from. ``on_epoch(epoch, mean_loss)`` reports progress.
    """
    dev = resolve_device(device)
    model = build(spec.arch, spec.seed).to(dev)
    opt = _optimizer(spec, model)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=spec.epochs)
    start = 0
    if checkpoint.exists():
        state = torch.load(checkpoint, map_location=dev, weights_only=True)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        start = int(state["epoch"])
    x, y = images.to(dev), labels.to(dev)
    for epoch in range(start, spec.epochs):
        model.train()
        order = torch.randperm(len(y), generator=torch.Generator().manual_seed(spec.seed * 10_007 + epoch))
        total = 0.0
        for batch in order.split(spec.batch_size):
            batch = batch.to(dev)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
            loss.backward()
            opt.step()
            total += loss.item() * len(batch)
        sched.step()
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        state = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(),
            "epoch": epoch + 1,
        }
        torch.save(state, checkpoint.with_suffix(".tmp"))
        checkpoint.with_suffix(".tmp").replace(checkpoint)
        if on_epoch is not None:
            on_epoch(epoch + 1, total / len(y))
    model.eval()
    return model


@torch.no_grad()
def forward(
    model: Classifier,
    images: torch.Tensor,
    *,
    batch_size: int = 1000,
    device: str | torch.device | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Penultimate features and logits of ``images``, on the CPU, in batches."""
    dev = resolve_device(device)
    model.eval().to(dev)
    feats, logits = [], []
    for chunk in images.split(batch_size):
        f = model.body(chunk.to(dev))
        feats.append(f.cpu())
        logits.append(model.head(f).cpu())
    return torch.cat(feats), torch.cat(logits)
