"""Fitting a state_dict to an architecture, with errors that name what does not fit."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from zootriage.core.errors import CheckpointKeyMismatch


def load_strict(model: nn.Module, state: dict[str, torch.Tensor], name: str) -> None:
    """Load every key, or raise naming the missing, unexpected and mis-shaped ones."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = [
        f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}"
        for k in sorted(set(own) & set(state))
        if state[k].shape != own[k].shape
    ]
    problems = [
        f"{label}: {_few(items)}"
        for label, items in (("missing keys", missing), ("unexpected keys", unexpected),
                             ("shape mismatches", shapes))
        if items
    ]
    if problems:
        raise CheckpointKeyMismatch(f"{name} does not fit {type(model).__name__}: " + "; ".join(problems))
    model.load_state_dict(state, strict=True)


def head_classes(state: dict[str, torch.Tensor], head: str, path: Path) -> int:
    """Number of classes, read off the rows of the classifier weight ``<head>.weight``."""
    weight = state.get(f"{head}.weight")
    if weight is None or weight.ndim != 2:
        raise CheckpointKeyMismatch(f"{path.name}: no classifier weight {head}.weight for this architecture")
    return int(weight.shape[0])


def replace_head(model: nn.Module, head: str, classes: int) -> None:
    """Give the ``nn.Linear`` named ``head`` ``classes`` outputs (a fresh layer; the state_dict fills it).

    Resizing in place keeps one generic path for every architecture, where rebuilding with
    ``num_classes`` would depend on each builder's arguments.
    """
    old = model.get_submodule(head)
    assert isinstance(old, nn.Linear)
    if old.out_features != classes:
        parent, _, name = head.rpartition(".")
        layer = nn.Linear(old.in_features, classes, bias=old.bias is not None)
        setattr(model.get_submodule(parent), name, layer)


def _few(items: list[str], limit: int = 5) -> str:
    more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more
