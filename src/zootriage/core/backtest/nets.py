"""The study's architectures: every one ends in a 512-d ReLU penultimate layer, then a linear head.

- ``mlp2`` 784-1024-512, ``mlp4`` 784-1024-1024-1024-512, ``cnn`` conv32-conv64-fc512;
- ``resnet-w8`` / ``resnet-w16``: a pre-activation ResNet (He et al., 2016, "Identity mappings"):
  a 3×3 stem, three stages of two basic blocks at widths w, 2w, 4w (stride 2 entering stages 2 and
  3), each block x + conv(relu(bn(conv(relu(bn(x)))))) with a 1×1 projection on the shortcut when the
  shape changes; then bn-relu, global average pooling and fc 4w → 512.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

PENULTIMATE = 512


class Classifier(nn.Module):
    """``body`` maps images to the 512-d penultimate features (ReLU outputs); ``head`` gives logits."""

    def __init__(self, body: nn.Module, n_classes: int) -> None:
        super().__init__()
        self.body = body
        self.head = nn.Linear(PENULTIMATE, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def _mlp(*widths: int) -> nn.Module:
    layers: list[nn.Module] = [nn.Flatten()]
    for n_in, n_out in zip((784, *widths), (*widths, PENULTIMATE), strict=True):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return nn.Sequential(*layers)


def _cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 7 * 7, PENULTIMATE),
        nn.ReLU(),
    )


class PreActBlock(nn.Module):
    """A pre-activation basic block: x + f(x), f = conv3×3 ∘ relu ∘ bn ∘ conv3×3 ∘ relu ∘ bn."""

    def __init__(self, n_in: int, n_out: int, stride: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(n_in)
        self.conv1 = nn.Conv2d(n_in, n_out, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(n_out)
        self.conv2 = nn.Conv2d(n_out, n_out, 3, padding=1, bias=False)
        self.shortcut: nn.Module | None = None
        if stride != 1 or n_in != n_out:
            self.shortcut = nn.Conv2d(n_in, n_out, 1, stride=stride, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(x))
        skip = x if self.shortcut is None else self.shortcut(out)
        out = self.conv1(out)
        out = self.conv2(torch.relu(self.bn2(out)))
        return out + skip


def _resnet(width: int) -> nn.Module:
    widths = (width, 2 * width, 4 * width)
    blocks: list[nn.Module] = [nn.Conv2d(1, width, 3, padding=1, bias=False)]
    n_in = width
    for stage, n_out in enumerate(widths):
        for block in range(2):
            blocks.append(PreActBlock(n_in, n_out, 2 if stage > 0 and block == 0 else 1))
            n_in = n_out
    blocks += [
        nn.BatchNorm2d(n_in),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(n_in, PENULTIMATE),
        nn.ReLU(),
    ]
    return nn.Sequential(*blocks)


ARCHITECTURES: dict[str, Callable[[], nn.Module]] = {
    "mlp2": lambda: _mlp(1024),
    "mlp4": lambda: _mlp(1024, 1024, 1024),
    "cnn": _cnn,
    "resnet-w8": lambda: _resnet(8),
    "resnet-w16": lambda: _resnet(16),
}


def build(arch: str, n_classes: int, seed: int) -> Classifier:
    """A freshly initialised ``arch`` model with its weights drawn from ``torch.manual_seed(seed)``."""
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}; known: {sorted(ARCHITECTURES)}")
    torch.manual_seed(seed)
    return Classifier(ARCHITECTURES[arch](), n_classes)


@torch.no_grad()
def features_and_logits(
    model: Classifier, images: torch.Tensor, device: torch.device, batch_size: int = 1000
) -> tuple[torch.Tensor, torch.Tensor]:
    """Penultimate features and logits of ``images`` in eval mode, returned on the CPU."""
    model.eval().to(device)
    feats, logits = [], []
    for chunk in images.split(batch_size):
        f = model.body(chunk.to(device))
        feats.append(f.cpu())
        logits.append(model.head(f).cpu())
    return torch.cat(feats), torch.cat(logits)
