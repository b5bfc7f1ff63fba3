"""Shared fixtures: real checkpoints from installed packages, exported as torch.export programs.

A test marked ``gpu`` needs a CUDA device and is skipped without one (it runs on the GPU machine).
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from pathlib import Path

import pytest
import torch
from torch import nn

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a missing timm checkpoint fails in 0.1 s, not 46 s

SITE = Path(sysconfig.get_paths()["purelib"])
MNIST_NORMALISED = {"channels": 1, "crop": [28, 28], "resize": None, "mean": [0.1307], "std": [0.3081]}
MNIST_RAW = {"channels": 1, "crop": [28, 28], "resize": None, "mean": [0.0], "std": [1.0]}


class LeNet5(nn.Module):
    """advertorch's MNIST LeNet5 (its package does not import on this torch; its checkpoints load)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=3, padding=1)
        self.linear1 = nn.Linear(7 * 7 * 64, 200)
        self.linear2 = nn.Linear(200, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.linear2(torch.relu(self.linear1(x.flatten(1))))


def export_program(model: nn.Module, path: Path, preprocess: dict | None, label_space: str | None) -> Path:
    """Save ``model`` as a .pt2 with a dynamic batch and our metadata, as a user would upload it."""
    batch = torch.export.Dim("batch")
    program = torch.export.export(model.eval(), (torch.zeros(2, 1, 28, 28),), dynamic_shapes=({0: batch},))
    meta = {"preprocess": preprocess, "label_space": label_space} if preprocess else {}
    torch.export.save(program, path, extra_files={"zootriage.json": json.dumps(meta)})
    return path


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In each process of a parallel run (pytest-xdist, ``--dist loadfile --no-loadscope-reorder``:
    ``make test``), the modules marked ``slow`` first, the random order kept within both halves.

    The processes take modules in the collection's order as they finish the last, so the run should
    end on short modules: with xdist's own order (most tests first) the few-test modules that start
    stacks and children (test_scaleout: 2 tests, 38 s; test_schema_fuzz: 1 test, 33 s) came last, and
    one process finished up to 22 s before the other. Run after every other plugin's changes (the
    random order's shuffle among them)."""
    if hasattr(config, "workerinput"):  # an xdist process; the collection must be the same in each
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile`` with the modules that share the running stacks in one unit
    (``tests.scheduling``); any other distribution is xdist's own."""
    if config.getoption("dist") != "loadfile":
        return None
    from tests.scheduling import SharedStacksScheduling

    return SharedStacksScheduling(config, log)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is not None and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device (runs on the GPU machine)")


@pytest.fixture
def wide_consoles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line's rich consoles print 200 columns wide in this test. They are made at import
    and fix their width from COLUMNS then (xdist's workers set 80), so setting COLUMNS for an in-process
    run is not enough: long lines would wrap and table cells be cut."""
    from rich.console import Console

    for name, module in list(sys.modules.items()):
        if name == "zootriage.app.cli" or name.startswith("zootriage.app.cli."):
            for value in vars(module).values():
                if isinstance(value, Console):
                    monkeypatch.setattr(value, "_width", 200)


def _state(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=True)


@pytest.fixture(scope="session")
def digit_programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """ccexam's MNIST CNN and advertorch's clean and adversarial LeNet5, as .pt2 programs."""
    from ccexam.models import MNISTNet

    folder = tmp_path_factory.mktemp("programs")
    ccexam = MNISTNet(28)
    ccexam.load_state_dict(_state(SITE / "ccexam" / "weights" / "mnist.pth"))
    programs = {"ccexam": export_program(ccexam, folder / "ccexam.pt2", MNIST_NORMALISED, "digits")}
    for kind in ("clntrained", "advtrained"):
        lenet = LeNet5()
        lenet.load_state_dict(_state(SITE / "advertorch_examples" / "trained_models" /
                                     f"mnist_lenet5_{kind}.pt"))
        programs[kind] = export_program(lenet, folder / f"lenet5_{kind}.pt2", MNIST_RAW, "digits")
    return programs
