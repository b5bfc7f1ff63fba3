"""Where compute runs: CUDA when present, else the CPU, unless the caller names a device."""

from __future__ import annotations

import torch


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """Return the torch device to compute on.

    ``None`` or ``"auto"`` picks the first CUDA device when one is visible and the CPU otherwise, so
    production workers use their GPU without configuration. A named device that is not available
    raises ``ValueError`` rather than silently falling back, as does a name that is no device.
    """
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ValueError(f"device {str(device)!r}: not a device (auto, cpu, cuda, cuda:1, ...)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(dev)!r} was requested but CUDA is not available")
    return dev
