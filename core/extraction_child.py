"""What the confined child does (``core.isolation.run_isolated("zootriage.core.extraction_child", ...)``).

It statically checks an uploaded checkpoint, loads the model and the dataset, runs the one extraction
pass over the sampled indices the parent chose, and writes features, logits and labels to
``extraction.safetensors`` in its folder (tensors only, so the parent reads them back without
unpickling anything). Progress, the model's description and any ``ZooError`` go to the parent as
protocol lines (:func:`core.confine.emit`).
"""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from zootriage.core.confine import emit
from zootriage.core.errors import ZooError

OUTPUT = "extraction.safetensors"
REQUEST = "request.json"


def run(request: dict[str, Any]) -> dict[str, Any]:
    """Load, extract, write ``OUTPUT``; the description of the model and its weights for the parent."""
    from safetensors.numpy import save_file

    from zootriage.core.data.archives import ArchiveLimits
    from zootriage.core.data.images import FittedImages
    from zootriage.core.data.open import open_dataset
    from zootriage.core.data.refs import validate_dataset_ref
    from zootriage.core.features import extract
    from zootriage.core.zoo.loader import load_model
    from zootriage.core.zoo.refs import validate_model_ref

    model_ref = validate_model_ref(request["model"])
    images = open_dataset(
        validate_dataset_ref(request["dataset"]), request["split"], roots=request["roots"],
        limits=ArchiveLimits(**request["limits"]),
    )
    start = time.perf_counter()
    emit({"progress": ["load_model", 0, 1]})
    loaded = load_model(model_ref)  # checkpoints pass core.zoo.archive_check first, in the loader
    emit({"progress": ["load_model", 1, 1]})
    loaded_at = time.perf_counter()
    extraction = extract(
        loaded.module,
        FittedImages(images, np.asarray(request["indices"], dtype=np.int64), loaded.preprocess),
        loaded.preprocess,
        batch_size=request["batch_size"],
        device=request["device"],
        num_workers=request["num_workers"],
        progress=lambda stage, done, total: emit({"progress": [stage, done, total]}),
    )
    save_file(
        {"features": extraction.features, "logits": extraction.logits, "labels": extraction.labels},
        OUTPUT,
    )
    return {
        "timings": {"load_model": loaded_at - start, "extract": time.perf_counter() - loaded_at},
        "info": loaded.info.to_dict(),
        "weights_sha256": loaded.weights_sha256,
        "preprocess": loaded.preprocess.model_dump(mode="json"),
    }


def main() -> None:
    try:
        emit({"result": run(json.loads(Path(REQUEST).read_text()))})
    except ZooError as exc:
        emit({"error": exc.to_dict()})
    except MemoryError:
        emit({"error": {"code": "resource_limit", "message": "the model ran out of its memory limit"}})
    except Exception as exc:
        traceback.print_exc()  # to stderr, which the parent logs for the operator
        emit({"error": _unexpected(exc)})


def _unexpected(exc: Exception) -> dict[str, str]:
    """A refused allocation is the job's limit (``resource_limit``); anything else is our bug or the
    library's, and the parent fails the job as ``internal_error``."""
    if isinstance(exc, RuntimeError) and _refused_allocation(exc):
        first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        return {"code": "resource_limit", "message": (
            "the model asked for more memory than its limit allows (a tensor too large for this "
            f"worker): {first}")}
    return {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}"}


def _refused_allocation(exc: RuntimeError) -> bool:
    """torch's allocators refuse with a ``RuntimeError`` (CPU: "can't allocate memory"; CUDA:
    ``torch.OutOfMemoryError``), not a ``MemoryError``."""
    text = str(exc)
    return type(exc).__name__ == "OutOfMemoryError" or any(
        sign in text for sign in ("can't allocate memory", "out of memory"))


if __name__ == "__main__":
    main()
