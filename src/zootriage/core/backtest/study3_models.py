"""Study 3's twelve architectures (docs/study/PLAN-3.md, "Architectures"), none used before.

Every one maps 1 × 28 × 28 images to a 512-d ReLU penultimate layer (the features) and is wrapped in
:class:`core.backtest.nets.Classifier`, whose linear head gives the task's logits, so training,
feature extraction and measurement are the registered study's code. The plan's table gives each
one's parameter count with a 5-class head; ``tests/unit/test_study3_models.py`` checks them.

- ``bnres*``: a post-activation BatchNorm ResNet (He et al., 2016): conv-BN-ReLU stem, three stages
  of basic blocks relu(bn(conv(relu(bn(conv(x))))) + s(x)), s a 1×1 conv-BN projection when the
  shape changes, stride 2 entering stages 2 and 3; global average pool; fc → 512, ReLU.
- ``vgg-bn``, ``mlp-bn``, ``dwsep-bn``: plain BatchNorm CNN, MLP and depthwise-separable CNN.
- ``vit-*``: non-overlapping patches, a learned position embedding, pre-norm encoder layers
  (``nn.TransformerEncoderLayer(norm_first=True)``, GELU, no dropout), LayerNorm, mean over tokens.
- ``mixer-*``: MLP-Mixer blocks x + token_mlp(LN(x))ᵀ, then x + channel_mlp(LN(x)); mean over tokens.
- ``convmixer-d64-p4``: a 4×4 stride-4 patch conv, then blocks x + BN(GELU(dwconv(x))) followed by
  BN(GELU(1×1 conv)).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from zootriage.core.backtest.nets import PENULTIMATE, Classifier


def _head(n_in: int) -> list[nn.Module]:
    """The shared ending: fc n_in → 512 and a ReLU, so the features are non-negative."""
    return [nn.Linear(n_in, PENULTIMATE), nn.ReLU()]


def _conv_bn(n_in: int, n_out: int, kernel: int, stride: int = 1, groups: int = 1) -> list[nn.Module]:
    return [
        nn.Conv2d(n_in, n_out, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(n_out),
    ]


class BasicBlock(nn.Module):
    """A post-activation basic block: relu(bn(conv(relu(bn(conv(x))))) + shortcut(x))."""

    def __init__(self, n_in: int, n_out: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(*_conv_bn(n_in, n_out, 3, stride), nn.ReLU(), *_conv_bn(n_out, n_out, 3))
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or n_in != n_out:
            self.shortcut = nn.Sequential(*_conv_bn(n_in, n_out, 1, stride))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


def _bnres(width: int, blocks_per_stage: int) -> nn.Module:
    layers: list[nn.Module] = [*_conv_bn(1, width, 3), nn.ReLU()]
    n_in = width
    for stage, n_out in enumerate((width, 2 * width, 4 * width)):
        for block in range(blocks_per_stage):
            layers.append(BasicBlock(n_in, n_out, 2 if stage > 0 and block == 0 else 1))
            n_in = n_out
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), *_head(n_in))


def _vgg_bn() -> nn.Module:
    def conv(n_in: int, n_out: int) -> list[nn.Module]:
        return [*_conv_bn(n_in, n_out, 3), nn.ReLU()]

    return nn.Sequential(
        *conv(1, 16), *conv(16, 16), nn.MaxPool2d(2),
        *conv(16, 32), *conv(32, 32), nn.MaxPool2d(2),
        nn.Flatten(), *_head(32 * 7 * 7),
    )  # fmt: skip


def _mlp_bn() -> nn.Module:
    layers: list[nn.Module] = [nn.Flatten()]
    for n_in in (784, PENULTIMATE, PENULTIMATE):
        layers += [nn.Linear(n_in, PENULTIMATE, bias=False), nn.BatchNorm1d(PENULTIMATE), nn.ReLU()]
    return nn.Sequential(*layers)


def _dwsep_bn() -> nn.Module:
    layers: list[nn.Module] = [*_conv_bn(1, 16, 3), nn.ReLU()]
    n_in = 16
    for n_out, stride in ((32, 1), (64, 2), (128, 2), (128, 1)):
        layers += [*_conv_bn(n_in, n_in, 3, stride, groups=n_in), nn.ReLU()]
        layers += [*_conv_bn(n_in, n_out, 1), nn.ReLU()]
        n_in = n_out
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), *_head(n_in))


class Patches(nn.Module):
    """Non-overlapping p × p patches of a 1 × 28 × 28 image as (batch, tokens, p²) rows."""

    def __init__(self, patch: int) -> None:
        super().__init__()
        if 28 % patch:
            raise ValueError(f"the patch size must divide 28, got {patch}")
        self.patch = patch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.patch
        n = x.shape[0]
        return x.reshape(n, 28 // p, p, 28 // p, p).permute(0, 1, 3, 2, 4).reshape(n, (28 // p) ** 2, p * p)


class ViT(nn.Module):
    """Patch embedding + learned positions, pre-norm encoder layers, LayerNorm, mean over tokens."""

    def __init__(self, patch: int, width: int, layers: int, heads: int, mlp: int) -> None:
        super().__init__()
        tokens = (28 // patch) ** 2
        self.patches = Patches(patch)
        self.embed = nn.Linear(patch * patch, width)
        self.position = nn.Parameter(torch.zeros(1, tokens, width))
        nn.init.normal_(self.position, std=0.02)
        layer = nn.TransformerEncoderLayer(
            width, heads, mlp, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.out = nn.Sequential(*_head(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(self.patches(x)) + self.position
        return self.out(self.norm(self.encoder(tokens)).mean(dim=1))


def _mlp(n: int, hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(n, hidden), nn.GELU(), nn.Linear(hidden, n))


class MixerBlock(nn.Module):
    def __init__(self, tokens: int, width: int, token_hidden: int, channel_hidden: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.token_mlp = _mlp(tokens, token_hidden)
        self.norm2 = nn.LayerNorm(width)
        self.channel_mlp = _mlp(width, channel_hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class Mixer(nn.Module):
    def __init__(self, patch: int, width: int, layers: int, token_hidden: int, channel_hidden: int) -> None:
        super().__init__()
        tokens = (28 // patch) ** 2
        self.patches = Patches(patch)
        self.embed = nn.Linear(patch * patch, width)
        self.blocks = nn.Sequential(
            *(MixerBlock(tokens, width, token_hidden, channel_hidden) for _ in range(layers))
        )
        self.norm = nn.LayerNorm(width)
        self.out = nn.Sequential(*_head(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(self.blocks(self.embed(self.patches(x)))).mean(dim=1))


class Residual(nn.Module):
    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


def _convmixer(width: int, patch: int, depth: int) -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(1, width, patch, stride=patch), nn.GELU(), nn.BatchNorm2d(width)]
    for _ in range(depth):
        layers += [
            Residual(
                nn.Sequential(
                    nn.Conv2d(width, width, 3, padding=1, groups=width), nn.GELU(), nn.BatchNorm2d(width)
                )
            ),
            nn.Conv2d(width, width, 1),
            nn.GELU(),
            nn.BatchNorm2d(width),
        ]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), *_head(width))


ARCHITECTURES: dict[str, Callable[[], nn.Module]] = {
    "bnres8-w8": lambda: _bnres(8, 1),
    "bnres14-w8": lambda: _bnres(8, 2),
    "bnres8-w12": lambda: _bnres(12, 1),
    "vgg-bn": _vgg_bn,
    "mlp-bn": _mlp_bn,
    "dwsep-bn": _dwsep_bn,
    "vit-p7-d64-l4": lambda: ViT(7, 64, 4, 4, 128),
    "vit-p7-d64-l2": lambda: ViT(7, 64, 2, 4, 128),
    "vit-p4-d48-l2": lambda: ViT(4, 48, 2, 4, 96),
    "mixer-p7-d128-l2": lambda: Mixer(7, 128, 2, 64, 256),
    "mixer-p4-d64-l2": lambda: Mixer(4, 64, 2, 98, 128),
    "convmixer-d64-p4": lambda: _convmixer(64, 4, 4),
}

# The plan's table: parameters with a 5-class head.
PLAN_PARAMETERS: dict[str, int] = {
    "bnres8-w8": 38_941,
    "bnres14-w8": 63_357,
    "bnres8-w12": 71_177,
    "vgg-bn": 822_357,
    "mlp-bn": 931_333,
    "dwsep-bn": 99_269,
    "vit-p7-d64-l4": 174_085,
    "vit-p7-d64-l2": 107_141,
    "vit-p4-d48-l2": 68_837,
    "mixer-p7-d128-l2": 212_389,
    "mixer-p4-d64-l2": 90_227,
    "convmixer-d64-p4": 57_285,
}


def build(arch: str, n_classes: int, seed: int) -> Classifier:
    """A freshly initialised ``arch`` model, its weights drawn from ``torch.manual_seed(seed)``."""
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown study-3 architecture {arch!r}; known: {sorted(ARCHITECTURES)}")
    torch.manual_seed(seed)
    return Classifier(ARCHITECTURES[arch](), n_classes)
