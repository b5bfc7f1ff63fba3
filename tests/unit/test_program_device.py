"""An exported program is placed on the job's device by torch.export's pass, not by ``module.to``.

``module.to(device)`` moves a graph module's parameters and buffers only: a program that makes a
tensor on its input's device at trace time (``arange(..., device=x.device)``, recorded as the CPU) or
holds a plain tensor attribute (lifted as a constant) kept those on the CPU, and its first batch on a
GPU failed. The ``meta`` device stands in for CUDA here (a device other than the CPU that needs no
hardware): the old way fails on it, the loader's way runs. Found by an audit of the GPU paths."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from zootriage.core.zoo.exporting import export_program
from zootriage.core.zoo.loader import load_model
from zootriage.core.zoo.program_metadata import ProgramMetadata
from zootriage.core.zoo.refs import CheckpointRef


class MadeOnItsInputsDevice(nn.Module):
    """A position term made in forward on the input's device, as many vision models do."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(x).mean(dim=(2, 3))
        return self.fc(h + torch.arange(h.shape[1], device=x.device, dtype=h.dtype))


class PlainTensorAttribute(nn.Module):
    """A tensor attribute that is neither a parameter nor a buffer: export lifts it as a constant."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8, 5)
        self.scale = torch.full((8,), 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(x).mean(dim=(2, 3)) * self.scale)


@pytest.mark.parametrize("model", [MadeOnItsInputsDevice, PlainTensorAttribute])
def test_a_program_runs_on_the_device_it_was_loaded_for(tmp_path: Path, model: type[nn.Module]) -> None:
    torch.manual_seed(0)
    path = export_program(model().eval(), (3, 16, 16), ProgramMetadata(), tmp_path / "m.pt2")
    ref = CheckpointRef(path=str(path))
    on_cpu = load_model(ref)
    moved = on_cpu.module.to("meta")  # the old way: parameters and buffers only
    with pytest.raises((RuntimeError, ValueError, AssertionError)):
        moved(torch.zeros(2, 3, 16, 16, device="meta"))
    placed = load_model(ref, "meta")
    assert placed.info.num_classes == 5  # the loader's own probe ran on the program's device
    penultimate, logits = placed.module(torch.zeros(2, 3, 16, 16, device="meta"))
    assert penultimate.device.type == logits.device.type == "meta" and tuple(logits.shape) == (2, 5)
    # and on the CPU it computes what the program computes
    x = torch.rand(2, 3, 16, 16)
    expected = torch.export.load(path).module()(x)
    torch.testing.assert_close(load_model(ref).module(x)[1], expected)
