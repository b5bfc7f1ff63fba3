"""The parent's side of an isolated extraction: what the child is asked, and reading its answer.

A checkpoint is staged into the child's folder under its own file name (the upload id for stored
uploads), so the child sees no server path and its messages name the user's file. The arrays come
back as a safetensors file and are checked for shape and dtype before use; nothing is unpickled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from zootriage.core.errors import CancelCheck
from zootriage.core.extraction_child import OUTPUT
from zootriage.core.features import Extraction, Progress
from zootriage.core.isolation import ChildLimits, run_isolated
from zootriage.core.zoo.refs import AnyModelRef, CheckpointRef


def extract_isolated(
    model: AnyModelRef,
    request: dict[str, Any],
    device: torch.device,
    progress: Progress,
    limits: ChildLimits | None = None,
    cancel: CancelCheck | None = None,
) -> tuple[Extraction, dict[str, Any]]:
    """Features, logits and labels of ``request["indices"]``, and the child's description of the model
    (``info``, ``weights_sha256``, ``preprocess``, ``timings``)."""
    inputs: dict[str, Path] = {}
    if isinstance(model, CheckpointRef):
        source = Path(model.path)
        inputs[source.name] = source
        model = model.model_copy(update={"path": source.name})
    expected = len(request["indices"])

    def collect(result: dict[str, Any], folder: Path) -> tuple[Extraction, dict[str, Any]]:
        return _read_arrays(folder / OUTPUT, expected), result

    return run_isolated(
        "zootriage.core.extraction_child",
        {**request, "model": model.model_dump(mode="json")},
        collect,
        limits=limits,
        gpu=device.type == "cuda",
        inputs=inputs,
        readable=request.get("roots", ()),
        on_progress=progress,
        cancel=cancel,
    )


def _read_arrays(path: Path, expected: int) -> Extraction:
    from safetensors.numpy import load_file

    arrays = load_file(str(path))
    features, logits, labels = arrays["features"], arrays["logits"], arrays["labels"]
    if (
        features.ndim != 2 or logits.ndim != 2 or labels.ndim != 1
        or not len(features) == len(logits) == len(labels) == expected
        or features.dtype != np.float32 or logits.dtype != np.float32 or labels.dtype != np.int64
    ):
        raise RuntimeError("the isolated child returned arrays of the wrong shape or type")
    return Extraction(features, logits, labels)
