"""One worker process per GPU, each pinned to its own device before CUDA is ever initialised.

The parent process must not touch CUDA (a CUDA context does not survive fork), so the GPU count comes
from settings, else from the ``CUDA_VISIBLE_DEVICES`` the worker was started with (an operator or a
scheduler giving it some of the machine's GPUs), else from ``nvidia-smi -L``; each pool child sets
``CUDA_VISIBLE_DEVICES`` to one of those devices in ``worker_process_init``, before its first job
imports a model onto the device. Each child also
caps torch's threads at its share of the cores left by its data loaders (``core.threads``).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess

import torch
from billiard.process import current_process

from zootriage.app.settings import Settings
from zootriage.core.features import default_workers
from zootriage.core.threads import thread_budget


def visible_devices() -> list[str] | None:
    """The devices ``CUDA_VISIBLE_DEVICES`` gives this worker (indices or UUIDs, as written; empty: none),
    or None where it is not set (every GPU of the machine)."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is None:
        return None
    return [device.strip() for device in given.split(",") if device.strip()]


def gpu_count(settings: Settings) -> int:
    if settings.gpus is not None:
        return settings.gpus
    if (given := visible_devices()) is not None:
        return len(given)
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=True)
    except (subprocess.SubprocessError, OSError):
        return 0
    return sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))


def process_count(settings: Settings) -> int:
    """One process per GPU; on a CPU-only machine a single process (torch already uses every core)."""
    return max(1, gpu_count(settings))


def worker_threads(settings: Settings) -> int:
    """torch threads for one pool child: the cores left after every child's DataLoader workers
    (``core.features.default_workers`` for the child's device kind), shared among the children."""
    count = gpu_count(settings)
    loaders = default_workers(torch.device("cuda" if count > 0 else "cpu"))
    return thread_budget(os.cpu_count() or 1, process_count(settings), loaders)


def prepare_pool_child(settings: Settings) -> None:
    """Give this pool child its own GPU (pool index modulo the GPU count, among the devices the worker
    was given: never one outside them), its share of the CPU threads, and let it start the
    data-loading processes torch's DataLoader uses: pool children are daemonic by default, and a
    daemonic process may not have children. The loaders exit with their parent (torch watches it)."""
    multiprocessing.current_process()._config["daemon"] = False  # type: ignore[attr-defined]
    count = gpu_count(settings)
    if count > 0:
        index = getattr(current_process(), "index", 0) or 0
        given = visible_devices() or [str(i) for i in range(count)]
        os.environ["CUDA_VISIBLE_DEVICES"] = given[index % len(given)]
    torch.set_num_threads(worker_threads(settings))
