"""A small upload whose graph asks for a huge tensor (``aten.ones([N])``): the sandbox's memory bound
refuses it and the job fails as ``resource_limit`` with a clear message, never ``internal_error`` and
never the host's OOM killer."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from tests.conftest import MNIST_RAW, LeNet5, export_program
from zootriage.core.data.refs import Sampling, parse_dataset_ref
from zootriage.core.errors import ResourceLimit
from zootriage.core.feature_cache import FeatureCache
from zootriage.core.isolation import ChildLimits
from zootriage.core.scoring import extract_features
from zootriage.core.zoo.refs import parse_model_ref

HUGE = 3 << 29  # 6 GiB of float32, from a file of a few hundred kB


class Hungry(nn.Module):
    """LeNet5 whose forward also materialises a constant-sized tensor that no input bounds."""

    def __init__(self) -> None:
        super().__init__()
        self.net = LeNet5()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        net = self.net
        x = nn.functional.max_pool2d(torch.relu(net.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(net.conv2(x)), 2)
        hidden = torch.relu(net.linear1(x.flatten(1))) + torch.ones(HUGE).sum() * 0
        return net.linear2(hidden)


def test_a_graph_that_allocates_past_the_bound_fails_as_a_resource_limit(tmp_path: Path) -> None:
    program = export_program(Hungry(), tmp_path / "hungry.pt2", MNIST_RAW, "digits")
    assert program.stat().st_size < 4 << 20
    assert "aten.ones" in str(torch.export.load(program).graph)  # what the attack is made of
    with pytest.raises(ResourceLimit, match="memory"):
        extract_features(
            parse_model_ref(f"ckpt:{program}"), parse_dataset_ref("builtin:mnist"),
            Sampling(classes=2, per_class=4, seed=0), cache=FeatureCache.folder(tmp_path / "cache"),
            child_limits=ChildLimits(memory_bytes=1536 << 20), num_workers=0,
        )
