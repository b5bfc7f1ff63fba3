"""Writing a self-describing ``.pt2``: a user's model as a ``torch.export`` program with a dynamic
batch and its ``zootriage.json`` (``core.zoo.program_metadata``), so that it uploads and scores with
the preprocessing and label space it was trained with rather than the bare [0, 1] fallback.

The model is traced on the CPU on purpose: the program stores its weights on the device it was
exported on, and a CPU program loads on every worker, which then moves it to its own device.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from zootriage.core.errors import BadCheckpoint
from zootriage.core.zoo.program_metadata import METADATA_FILE, ProgramMetadata

MAX_BATCH = 4096


def export_program(
    model: nn.Module, input_shape: tuple[int, int, int], metadata: ProgramMetadata, out: Path
) -> Path:
    """Export ``model`` (in eval mode) for inputs ``(N, *input_shape)``, N from 1 to ``MAX_BATCH``.

    The preprocessing must produce exactly that input (channels, crop): a program fed something else
    would fail in every job, so it is refused here, where the user can fix it.
    """
    if metadata.preprocess is not None:
        fed = (metadata.preprocess.channels, *metadata.preprocess.crop)
        if fed != tuple(input_shape):
            raise BadCheckpoint(f"the preprocessing gives (C, H, W) = {fed}; the input shape: {input_shape}")
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    example = torch.zeros((2, *input_shape))
    try:
        program = torch.export.export(model.cpu().eval(), (example,), dynamic_shapes=({0: batch},))
    except Exception as exc:  # torch's export errors are many kinds; the user needs the first line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadCheckpoint(f"torch.export could not export {type(model).__name__}: {first}") from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    # Every field written, nulls included: a missing ``resize`` would read back as the default 256.
    extra = {METADATA_FILE: metadata.model_dump_json()}
    torch.export.save(program, str(out), extra_files=extra)
    return out
