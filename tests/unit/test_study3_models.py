"""Study 3's architectures (docs/study/PLAN-3.md, "Architectures"): the plan's parameter counts, a 512-d
non-negative penultimate, and weights fixed by the seed."""

from __future__ import annotations

import pytest
import torch

from zootriage.core.backtest.study3_models import ARCHITECTURES, PLAN_PARAMETERS, build

# The plan's table, copied here so that a change to PLAN_PARAMETERS cannot silently pass.
PLAN_TABLE = {
    "bnres8-w8": 38941, "bnres14-w8": 63357, "bnres8-w12": 71177, "vgg-bn": 822357, "mlp-bn": 931333,
    "dwsep-bn": 99269, "vit-p7-d64-l4": 174085, "vit-p7-d64-l2": 107141, "vit-p4-d48-l2": 68837,
    "mixer-p7-d128-l2": 212389, "mixer-p4-d64-l2": 90227, "convmixer-d64-p4": 57285,
}  # fmt: skip
OLD = {"mlp2", "mlp4", "cnn", "resnet-w8", "resnet-w16"}


def test_the_twelve_architectures_are_the_plans_and_new() -> None:
    assert set(ARCHITECTURES) == set(PLAN_TABLE) == set(PLAN_PARAMETERS)
    assert len(ARCHITECTURES) == 12 and not set(ARCHITECTURES) & OLD


@pytest.mark.parametrize("arch", sorted(PLAN_TABLE))
def test_parameter_count_and_penultimate(arch: str) -> None:
    model = build(arch, 5, seed=0)
    assert sum(p.numel() for p in model.parameters()) == PLAN_TABLE[arch]
    model.eval()
    with torch.no_grad():
        features = model.body(torch.rand(4, 1, 28, 28, generator=torch.Generator().manual_seed(1)))
        logits = model(torch.rand(4, 1, 28, 28))
    assert features.shape == (4, 512) and bool((features >= 0).all())
    assert float(features.abs().sum()) > 0  # not a dead layer at initialisation
    assert logits.shape == (4, 5)


@pytest.mark.parametrize("arch", ["bnres8-w8", "vit-p4-d48-l2", "mixer-p4-d64-l2"])
def test_weights_are_fixed_by_the_seed(arch: str) -> None:
    a, b, c = build(arch, 5, 3), build(arch, 5, 3), build(arch, 5, 4)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert any(not torch.equal(pa, pc) for pa, pc in zip(a.parameters(), c.parameters(), strict=True))


def test_unknown_architecture_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown study-3 architecture 'cnn'"):
        build("cnn", 5, 0)
