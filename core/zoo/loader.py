"""One entry point from a model reference to a ready module, its preprocessing and its identity."""

from __future__ import annotations

import json
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from pydantic import ValidationError
from torch import nn

from core.errors import BadCheckpoint, CheckpointKeyMismatch, NotACheckpoint, TruncatedCheckpoint
from core.zoo import timm_zoo, torchvision_zoo
from core.zoo.penultimate import (
    HeadInputPenultimate,
    TimmPenultimate,
    exported_penultimate,
    find_output_linear,
)
from core.zoo.preprocess import Preprocess, from_torchvision
from core.zoo.refs import CheckpointRef, TimmRef, TorchvisionRef
from core.zoo.weights import read_state_dict, sha256_file

IMAGENET_1K = "imagenet-1k"
PROGRAM_METADATA = "zootriage.json"  # extra file of a .pt2: {"preprocess": {...}, "label_space": "..."}


@dataclass(frozen=True)
class ModelInfo:
    source: str
    architecture: str
    weights: str
    acc1: float | None
    num_params: int
    num_classes: int
    label_space: str | None
    penultimate: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LoadedModel:
    """``module(x)`` returns ``(penultimate, logits)``, on the CPU. Library models are put in eval mode
    here; an exported program already runs as it was exported (export fixes train/eval behaviour)."""

    module: nn.Module
    preprocess: Preprocess
    info: ModelInfo
    weights_sha256: str


def load_model(ref: TorchvisionRef | TimmRef | CheckpointRef) -> LoadedModel:
    if isinstance(ref, TorchvisionRef):
        return _torchvision(ref)
    if isinstance(ref, TimmRef):
        return _timm(ref)
    if ref.library is None:
        return _program(ref)
    return _state_dict(ref)


def _torchvision(ref: TorchvisionRef) -> LoadedModel:
    weights = torchvision_zoo.weights_enum(ref.arch, ref.weights)
    path = torchvision_zoo.weights_file(weights)
    meta = torchvision_zoo.metadata(weights)
    model = torchvision_zoo.build(ref.arch, meta["num_categories"] or 1000)
    load_strict(model, read_state_dict(path), path.name)
    model.eval()
    preprocess = from_torchvision(weights.transforms())
    module, head = _head_input(model, preprocess)
    return _loaded(
        module, preprocess, path, "torchvision", ref.arch, weights.name, meta["acc1"], IMAGENET_1K, head
    )


def _timm(ref: TimmRef) -> LoadedModel:
    model = timm_zoo.build(ref.name)
    path = timm_zoo.weights_file(model)
    load_strict(model, read_state_dict(path), path.name)
    model.eval()
    space = IMAGENET_1K if _timm_classes(model) == 1000 else None
    cfg: Any = model.pretrained_cfg
    tag = str(cfg.get("tag") or "")
    return _loaded(
        TimmPenultimate(model), timm_zoo.preprocess(model), path, "timm", ref.name.partition(".")[0],
        tag, None, space, "forward_head(pre_logits=True)",
    )


def _state_dict(ref: CheckpointRef) -> LoadedModel:
    assert ref.architecture is not None
    path = Path(ref.path)
    state = read_state_dict(path)
    if ref.library == "torchvision":
        with torch.device("meta"):  # structure only, to find the head's name
            default = torchvision_zoo.build(ref.architecture, 1000)
        classes = _head_classes(state, find_output_linear(default, (3, 224, 224)), path)
        model = torchvision_zoo.build(ref.architecture, classes)
        preprocess = ref.preprocess or _torchvision_default_preprocess(ref.architecture)
        load_strict(model, state, path.name)
        module, where = _head_input(model.eval(), preprocess)
    else:
        model = timm_zoo.build(ref.architecture)
        classes = _head_classes(state, timm_zoo.head_name(model), path)
        if classes != _timm_classes(model):
            model.reset_classifier(classes)  # type: ignore[operator]
        load_strict(model, state, path.name)
        preprocess = ref.preprocess or timm_zoo.preprocess(model)
        module, where = TimmPenultimate(model.eval()), "forward_head(pre_logits=True)"
    space = ref.label_space or (IMAGENET_1K if classes == 1000 else None)
    return _loaded(
        module, preprocess, path, "checkpoint", f"{ref.library}:{ref.architecture}", path.name, None,
        space, where,
    )


def _program(ref: CheckpointRef) -> LoadedModel:
    path = Path(ref.path)
    program, saved = _read_program(path)
    graph_module, node = exported_penultimate(program, ref.penultimate_node)
    shape = _input_shape(graph_module)
    try:
        preprocess = ref.preprocess or (
            Preprocess.model_validate(saved["preprocess"]) if "preprocess" in saved
            else Preprocess(
                channels=shape[1], crop=(shape[2], shape[3]), resize=None, mean=(0.0,) * shape[1],
                std=(1.0,) * shape[1],
            )
        )
    except ValidationError as exc:
        raise BadCheckpoint(f"{path.name}: no usable preprocessing for input {shape} ({exc})") from exc
    fed = (preprocess.channels, *preprocess.crop)
    if any(want is not None and want != got for want, got in zip(shape[1:], fed, strict=True)):
        raise BadCheckpoint(
            f"{path.name}: the program takes (N, C, H, W) = {shape}, its preprocessing gives {fed}"
        )
    module: nn.Module = FixedBatch(graph_module, shape[0]) if isinstance(shape[0], int) else graph_module
    return _loaded(
        module, preprocess, path, "checkpoint", "torch.export", path.name, None,
        ref.label_space or saved.get("label_space"), node,
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


def load_strict(model: nn.Module, state: dict[str, torch.Tensor], name: str) -> None:
    """Load every key, or raise naming the missing, unexpected and mis-shaped ones."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = [
        f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}"
        for k in sorted(set(own) & set(state))
        if state[k].shape != own[k].shape
    ]
    problems = [
        f"{label}: {_few(items)}"
        for label, items in (("missing keys", missing), ("unexpected keys", unexpected),
                             ("shape mismatches", shapes))
        if items
    ]
    if problems:
        raise CheckpointKeyMismatch(
            f"{name} does not fit {type(model).__name__}: " + "; ".join(problems)
        )
    model.load_state_dict(state, strict=True)


def _few(items: list[str], limit: int = 5) -> str:
    more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _head_classes(state: dict[str, torch.Tensor], head: str, path: Path) -> int:
    weight = state.get(f"{head}.weight")
    if weight is None or weight.ndim != 2:
        raise CheckpointKeyMismatch(f"{path.name}: no classifier weight {head}.weight for this architecture")
    return int(weight.shape[0])


def _head_input(model: nn.Module, preprocess: Preprocess) -> tuple[nn.Module, str]:
    head = find_output_linear(model, (preprocess.channels, *preprocess.crop))
    return HeadInputPenultimate(model, model.get_submodule(head)), f"input of {head}"


def _torchvision_default_preprocess(arch: str) -> Preprocess:
    return from_torchvision(torchvision_zoo.weights_enum(arch, "DEFAULT").transforms())


def _timm_classes(model: nn.Module) -> int:
    return int(model.num_classes)  # type: ignore[arg-type]


def _read_program(path: Path) -> tuple[torch.export.ExportedProgram, dict[str, Any]]:
    if not path.is_file():
        raise NotACheckpoint(f"{path.name}: no such file")
    with open(path, "rb") as f:
        if f.read(2) != b"PK":
            raise NotACheckpoint(f"{path.name}: not a torch.export program (not a zip archive)")
    if not zipfile.is_zipfile(path):
        raise TruncatedCheckpoint(f"{path.name}: the .pt2 archive is incomplete (truncated file?)")
    extra = {PROGRAM_METADATA: ""}
    try:
        program = torch.export.load(path, extra_files=extra)
    except Exception as exc:
        raise BadCheckpoint(f"{path.name}: not a loadable torch.export program ({exc})") from exc
    try:
        saved = json.loads(extra[PROGRAM_METADATA]) if extra[PROGRAM_METADATA] else {}
    except ValueError as exc:
        raise BadCheckpoint(f"{path.name}: its {PROGRAM_METADATA} is not JSON") from exc
    return program, saved


def _input_shape(module: nn.Module) -> tuple[Any, ...]:
    graph: Any = module.graph
    placeholder = next(n for n in graph.nodes if n.op == "placeholder")
    value = placeholder.meta.get("val")
    if value is None or value.ndim != 4:
        raise BadCheckpoint("the program's input is not an image batch (N, C, H, W)")
    return tuple(d if isinstance(d, int) else None for d in value.shape)


def _loaded(
    module: nn.Module, preprocess: Preprocess, path: Path, source: str, architecture: str, weights: str,
    acc1: float | None, label_space: str | None, penultimate: str,
) -> LoadedModel:
    info = ModelInfo(
        source=source,
        architecture=architecture,
        weights=weights,
        acc1=acc1,
        num_params=sum(p.numel() for p in module.parameters()),
        num_classes=_logit_count(module, preprocess),
        label_space=label_space,
        penultimate=penultimate,
    )
    return LoadedModel(module, preprocess, info, sha256_file(path))


def _logit_count(module: nn.Module, preprocess: Preprocess) -> int:
    with torch.inference_mode():
        _, logits = module(torch.zeros((1, preprocess.channels, *preprocess.crop)))
    return int(logits.shape[-1])
