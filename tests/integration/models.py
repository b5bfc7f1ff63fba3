"""A small real trained model for end-to-end jobs: ccexam's MNIST CNN (99% on MNIST), exported as a
``torch.export`` program so that it uploads as one self-describing ``.pt2`` checkpoint."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import torch

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
