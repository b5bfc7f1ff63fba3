"""What the sandboxed child does (``core.isolation.Child("zootriage.core.extraction_child")``).

Two messages from the parent, two answers, so that nothing is opened twice and the parent never opens
the (untrusted) dataset itself:

1. started ahead of its job (a warm child), it imports torch and our code, says ``{"ready": ...}``;
2. ``{dataset, split, roots, limits, sampling}``: it opens the dataset, draws the seeded sample and
   answers ``{"sampled": {fingerprint, classes, label_space}}``, all the parent needs for the feature
   cache's key;
3. ``{model, batch_size, device, num_workers}`` (only when the cache misses; otherwise the parent
   closes it): it statically checks an uploaded checkpoint, loads the model, runs the one extraction
   pass over the sample and writes features, logits and labels to ``extraction.safetensors`` in its
   folder (tensors only, so the parent reads them back without unpickling anything), then answers
   ``{"result": ...}``.

Progress and any ``ZooError`` go to the parent as protocol lines (:func:`core.confine.emit`).
"""

from __future__ import annotations

import importlib
import os
import time
import traceback
from typing import Any

from zootriage.core.confine import GPU_ENV, JOB_WAITING_ENV, emit, receive
from zootriage.core.errors import ZooError

OUTPUT = "extraction.safetensors"
# What torch.export.load imports on its first call (its deserialiser, the unlifting pass and what they
# pull in: sympy for symbolic batch sizes, aot_autograd, inductor's size rules). The first load of the
# MNIST CNN program took 0.54 s without them, 0.14-0.26 s with them (loaded 2-core build machine).
PROGRAM_MODULES = (
    "sympy",
    "torch._export.serde.serialize",
    "torch.export._trace",
    "torch.export._unlift",
    "torch.utils.serialization",
    "torch._inductor.sizevars",
)


def warm_up() -> list[str]:
    """What every job would otherwise wait for, done before any untrusted byte is seen: the imports
    (most of a cold start) with those torch.export.load makes on its first call (``PROGRAM_MODULES``),
    the package datasets opened (MNIST mapped from the files its parent decoded, ``core.data.mapped``;
    decoding it here, where those are missing, takes 0.5 s), and one small convolution and product,
    so the first batch does not pay for the kernels' set-up; in a child started for GPU work
    (``GPU_ENV``) also on the GPU, which creates the CUDA context. Returns the devices warmed.

    A child started for a job that already waits (``JOB_WAITING_ENV``) does the imports every job
    needs alone (not the loaders of timm, torchvision models or torch.export programs: a job imports
    the one it uses when it loads its model): the rest is for any job, and this one opens its own
    dataset and modules when it asks (decoding every builtin set and importing the export modules
    took about 2 s of such a child's start on the 2-core build machine, before its job could begin).
    It warms no device."""
    import safetensors.numpy  # noqa: F401
    import torch
    import torchvision  # noqa: F401

    import zootriage.core.data.fitting  # every job fits its images (torchvision's v2 transforms)
    import zootriage.core.features
    import zootriage.core.zoo.loader
    from zootriage.core.data.builtin import BUILTIN, open_builtin

    if os.environ.get(JOB_WAITING_ENV) == "1":
        return []

    # What the loader imports only for the models that need them (core.zoo.loader), for any job here:
    import zootriage.core.zoo.programs
    import zootriage.core.zoo.timm_zoo  # timm: 0.4 s a timm job would wait for
    import zootriage.core.zoo.torchvision_zoo  # noqa: F401

    for name in BUILTIN:
        try:
            open_builtin(name, None)
        except (ZooError, OSError, ImportError):
            continue  # a package the worker lacks: its jobs will say so
    for name in PROGRAM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue  # another torch release lays its internals out otherwise: that job imports them
    devices = ["cpu"]
    if os.environ.get(GPU_ENV) == "1" and torch.cuda.is_available():
        devices.append("cuda")  # the CUDA context and cuDNN's handles: ~0.4 s a GPU job would wait for
    for device in devices:
        with torch.inference_mode(), torch.autocast(device, torch.bfloat16, enabled=device == "cuda"):
            pixels = torch.zeros(2, 3, 16, 16, device=device)
            weights = torch.zeros(4, 3, 3, 3, device=device)
            torch.nn.functional.conv2d(pixels, weights).flatten(1) @ torch.zeros(784, 2, device=device)
    return devices


def sample(request: dict[str, Any]) -> tuple[Any, Any]:
    """The dataset opened under its roots and the seeded sample drawn (``core.data.sampling``)."""
    from zootriage.core.data.archives import ArchiveLimits
    from zootriage.core.data.open import open_dataset
    from zootriage.core.data.refs import Sampling, validate_dataset_ref
    from zootriage.core.data.sampling import sample as draw

    sampling = Sampling.model_validate(request["sampling"])
    images = open_dataset(
        validate_dataset_ref(request["dataset"]), sampling.split, roots=request["roots"],
        limits=ArchiveLimits(**request["limits"]),
    )
    return images, draw(images, sampling)


def extract(images: Any, chosen: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Load, extract, write ``OUTPUT``; the description of the model and its weights for the parent."""
    import torch
    from safetensors.numpy import save_file

    from zootriage.core.data.fitting import FittedImages
    from zootriage.core.features import extract as forward
    from zootriage.core.zoo.loader import load_model
    from zootriage.core.zoo.refs import validate_model_ref

    model_ref = validate_model_ref(request["model"])
    torch.set_num_threads(max(1, min(int(request["threads"]), os.cpu_count() or 1)))
    start = time.perf_counter()
    emit({"progress": ["load_model", 0, 1]})
    from zootriage.core.device import resolve_device

    # checkpoints pass core.zoo.archive_check first, in the loader; a program is placed on the device
    loaded = load_model(model_ref, resolve_device(request["device"]))
    emit({"progress": ["load_model", 1, 1]})
    loaded_at = time.perf_counter()
    extraction = forward(
        loaded.module,
        FittedImages(images, chosen.indices, loaded.preprocess),
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
        "threads": torch.get_num_threads(),
        "info": loaded.info.to_dict(),
        "weights_sha256": loaded.weights_sha256,
        "preprocess": loaded.preprocess.model_dump(mode="json"),
    }


def main() -> None:
    try:
        started = time.perf_counter()
        warmed = warm_up()
        emit({"ready": {"warm_up_s": time.perf_counter() - started, "devices": warmed}})
        images, chosen = sample(receive())
        emit({"sampled": {
            "fingerprint": chosen.fingerprint,
            "classes": len(chosen.classes),
            "images": len(chosen.indices),
            "label_space": images.label_space,
        }})
        request = receive()
        if request:
            emit({"result": extract(images, chosen, request)})
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
