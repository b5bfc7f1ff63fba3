"""Models for end-to-end jobs: ccexam's MNIST CNN (99% on MNIST), exported as a ``torch.export`` program
so that it uploads as one self-describing ``.pt2`` checkpoint, and seeded torchvision weights placed
where a TORCH_HOME expects downloaded ones."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import torch
import torchvision

PREPROCESS = {
    "channels": 1,
    "crop": [28, 28],
    "resize": None,
    "mean": [0.0],
    "std": [1.0],
}


def export_mnist_cnn(folder: Path) -> Path:
    from ccexam.models import MNISTNet

    model = MNISTNet(input_size=28)
    weights = files("ccexam") / "weights" / "mnist.pth"
    model.load_state_dict(torch.load(str(weights), map_location="cpu", weights_only=True))
    batch = torch.export.Dim("batch", min=1, max=4096)
    program = torch.export.export(model.eval(), (torch.zeros(2, 1, 28, 28),), dynamic_shapes=({0: batch},))
    path = folder / "mnist_cnn.pt2"
    extra = {"zootriage.json": json.dumps({"preprocess": PREPROCESS})}
    torch.export.save(program, str(path), extra_files=extra)
    return path


def place_torchvision_weights(torch_home: Path, arch: str, weights: str, seed: int) -> Path:
    """A seeded random-init state_dict under the enum's expected file name, as the zoo tests do."""
    enum = torchvision.models.get_model_weights(arch)[weights]
    folder = torch_home / "hub" / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    path = folder / Path(enum.url).name
    torch.save(torchvision.models.get_model(arch, num_classes=1000).state_dict(), path)
    return path
