"""``torch.export`` programs (``.pt2``): any architecture, no code from the user.

A program carries its graph and weights; ``torch.export.save(..., extra_files={"zootriage.json": ...})``
may add its preprocessing, label space and architecture (``core.zoo.program_metadata``). With no
preprocessing given anywhere, the program's input shape sets channels and size, pixels are only scaled
to [0, 1], and the program says so in ``Program.warnings``: a plain export is then scored with
preprocessing it was probably not trained with, which moves every marker.
"""

from __future__ import annotations

import pickle
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import torch
import torch.export.passes
from pydantic import ValidationError
from torch import nn
from torch.export.pt2_archive import _package

from zootriage.core.errors import BadCheckpoint, CheckpointNeedsCode, NotACheckpoint, TruncatedCheckpoint
from zootriage.core.zoo.penultimate import exported_penultimate
from zootriage.core.zoo.preprocess import Preprocess
from zootriage.core.zoo.program_metadata import METADATA_FILE, ProgramMetadata, parse_metadata

NO_PREPROCESS = (
    "no preprocessing given: pixels scaled to [0,1] at the program's input size; pass preprocess=... "
    "(at upload, in the job's model, or in the program's zootriage.json)"
)


@dataclass(frozen=True)
class Program:
    module: nn.Module  # forward(x) -> (penultimate, logits)
    preprocess: Preprocess
    penultimate: str
    label_space: str | None
    architecture: str | None
    warnings: tuple[str, ...]


def load_program(
    path: Path,
    node_name: str | None,
    preprocess: Preprocess | None,
    label_space: str | None,
    device: torch.device | str = "cpu",
) -> Program:
    """The program at ``path`` (for an upload, the static check's canonical rewrite: ``core.zoo.
    loader``) on ``device``; arguments that are not ``None`` override what was saved with it.

    The program is moved with torch.export's own pass before its module is made: ``module.to(device)``
    moves parameters and buffers only, not the tensors a graph holds as constants nor the devices its
    operators name (``arange(..., device=cpu)``, the device checks export records), so a program moved
    that way fails on its first batch on a GPU. The pass also brings a program saved from a GPU (whose
    weights load back onto that GPU) to the device asked for."""
    program, saved = _read(path)
    try:
        program = torch.export.passes.move_to_device_pass(program, str(device))
    except Exception as exc:  # an operator the pass cannot rewrite: the program cannot run there
        raise BadCheckpoint(f"{path.name}: the program cannot be moved to {device} ({exc})") from exc
    graph_module, node = exported_penultimate(program, node_name)
    shape = _input_shape(graph_module)
    chosen = preprocess or saved.preprocess
    warnings = () if chosen is not None else (NO_PREPROCESS,)
    if chosen is None:
        try:
            chosen = Preprocess(
                channels=shape[1], crop=(shape[2], shape[3]), resize=None, mean=(0.0,) * shape[1],
                std=(1.0,) * shape[1],
            )
        except ValidationError as exc:
            raise BadCheckpoint(f"{path.name}: no usable preprocessing for input {shape} ({exc})") from exc
    fed = (chosen.channels, *chosen.crop)
    if any(want is not None and want != got for want, got in zip(shape[1:], fed, strict=True)):
        raise BadCheckpoint(
            f"{path.name}: the program takes (N, C, H, W) = {shape}, its preprocessing gives {fed}"
        )
    module: nn.Module = FixedBatch(graph_module, shape[0]) if isinstance(shape[0], int) else graph_module
    return Program(
        module, chosen, node, label_space or saved.label_space, saved.architecture, warnings
    )


class FixedBatch(nn.Module):
    """Runs a program exported with a static batch size on any batch, in padded chunks of that size."""

    def __init__(self, module: nn.Module, size: int) -> None:
        super().__init__()
        self.inner = module
        self.size = size

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        outs = []
        for chunk in x.split(self.size):
            pad = self.size - chunk.shape[0]
            padded = torch.cat([chunk, chunk.new_zeros((pad, *chunk.shape[1:]))]) if pad else chunk
            pen, logits = self.inner(padded)
            outs.append((pen[: chunk.shape[0]], logits[: chunk.shape[0]]))
        return torch.cat([o[0] for o in outs]), torch.cat([o[1] for o in outs])


def _read(path: Path) -> tuple[torch.export.ExportedProgram, ProgramMetadata]:
    if not path.is_file():
        raise NotACheckpoint(f"{path.name}: no such file")
    with open(path, "rb") as f:
        if f.read(2) != b"PK":
            raise NotACheckpoint(f"{path.name}: not a torch.export program (not a zip archive)")
    if not zipfile.is_zipfile(path):
        raise TruncatedCheckpoint(f"{path.name}: the .pt2 archive is incomplete (truncated file?)")
    extra = {METADATA_FILE: ""}
    try:
        with _tensors_only():
            program = torch.export.load(path, extra_files=extra)
    except Exception as exc:
        if _refused(exc):
            raise CheckpointNeedsCode(
                f"{path.name}: the program holds pickled objects that need code to load, refused"
            ) from exc
        raise BadCheckpoint(f"{path.name}: not a loadable torch.export program ({exc})") from exc
    return program, parse_metadata(extra[METADATA_FILE], path.name)


class _Refused(pickle.UnpicklingError):
    pass


def _refuse(*_args: object, **_kwargs: object) -> None:
    raise _Refused("arbitrary pickles are not loaded from uploaded programs")


@contextmanager
def _tensors_only() -> Iterator[None]:
    """While a program loads, every ``torch.load`` runs with ``weights_only=True`` and plain pickles
    are refused.

    ``torch.export.load`` (torch 2.14) unpickles some payloads with ``weights_only=False`` (pickled
    weights and constants, and as a fallback its sample inputs) and opaque constants with
    ``pickle.loads``: a crafted ``.pt2`` could run code. ``core.zoo.archive_check`` refuses such files
    before this runs; the patch is defence in depth. It is process-wide, which is safe because
    programs load only in an isolated child that loads one model (``core.isolation``).
    """
    real_load = torch.load

    def strict_load(*args: Any, **kwargs: Any) -> Any:
        kwargs["weights_only"] = True
        return real_load(*args, **kwargs)

    with (
        mock.patch.object(torch, "load", strict_load),
        mock.patch.object(torch._C, "_pickle_load_obj", _refuse),
        mock.patch.object(_package, "pickle", SimpleNamespace(loads=_refuse)),
    ):
        yield


def _refused(exc: BaseException) -> bool:
    """Whether the failure, or one it was raised from, is a refused unpickling."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, pickle.UnpicklingError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _input_shape(module: nn.Module) -> tuple[Any, ...]:
    """(N, C, H, W) of the program's input; ``None`` where a dimension is dynamic."""
    graph: Any = module.graph
    placeholder = next(n for n in graph.nodes if n.op == "placeholder")
    value = placeholder.meta.get("val")
    if value is None or value.ndim != 4:
        raise BadCheckpoint("the program's input is not an image batch (N, C, H, W)")
    return tuple(d if isinstance(d, int) else None for d in value.shape)
