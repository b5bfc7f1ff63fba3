"""One entry point from a model reference to a ready module, its preprocessing and its identity."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from zootriage.core.zoo.archive_check import checked_copy
from zootriage.core.zoo.penultimate import HeadInputPenultimate, TimmPenultimate, find_output_linear
from zootriage.core.zoo.preprocess import Preprocess, from_torchvision
from zootriage.core.zoo.refs import AnyModelRef, CheckpointRef, TimmRef, TorchvisionRef
from zootriage.core.zoo.state_dicts import head_classes, load_strict, replace_head
from zootriage.core.zoo.weights import read_state_dict, sha256_file

IMAGENET_1K = "imagenet-1k"
PROGRAM = "torch.export"  # the architecture of a program that does not name its own


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
    # What the run's reader should know, e.g. that no preprocessing was given (core.zoo.programs).
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LoadedModel:
    """``module(x)`` returns ``(penultimate, logits)``: a library model on the CPU (moved by
    ``core.features.extract``), an exported program already on the device ``load_model`` was given
    (``core.zoo.programs.load_program``: a program is moved by a pass, not by ``module.to``). Library
    models are put in eval mode here; an exported program already runs as it was exported (export fixes
    train/eval behaviour)."""

    module: nn.Module
    preprocess: Preprocess
    info: ModelInfo
    weights_sha256: str


def load_model(ref: AnyModelRef, device: torch.device | str = "cpu") -> LoadedModel:
    """Build the model in this process, for ``device`` (where an exported program is placed; a
    library model stays on the CPU until extraction moves it). A checkpoint passes the static check
    first and torch loads what the check read (``_checked``); callers with untrusted files run this only
    in an isolated child (``core.scoring``)."""
    if isinstance(ref, TorchvisionRef):
        return _torchvision(ref)
    if isinstance(ref, TimmRef):
        return _timm(ref)
    if ref.library is None:
        return _program(ref, torch.device(device))
    return _state_dict(ref)


def _torchvision(ref: TorchvisionRef) -> LoadedModel:
    from zootriage.core.zoo import torchvision_zoo  # torchvision: imported by the jobs that use it

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
    from zootriage.core.zoo import timm_zoo  # timm is imported by the jobs that use it (0.4 s)

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
    with _checked(path) as loadable:
        state = read_state_dict(loadable)
    module: nn.Module
    if ref.library == "torchvision":
        from zootriage.core.zoo import torchvision_zoo

        model = torchvision_zoo.build(ref.architecture, 1000)
        preprocess = ref.preprocess or _torchvision_default_preprocess(ref.architecture)
        head = find_output_linear(model, (preprocess.channels, *preprocess.crop))
        classes = head_classes(state, head, path)
        replace_head(model, head, classes)
        load_strict(model, state, path.name)
        module, where = HeadInputPenultimate(model.eval(), model.get_submodule(head)), f"input of {head}"
    else:
        from zootriage.core.zoo import timm_zoo

        model = timm_zoo.build(ref.architecture)
        classes = head_classes(state, timm_zoo.head_name(model), path)
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


def _program(ref: CheckpointRef, device: torch.device) -> LoadedModel:
    from zootriage.core.zoo.programs import load_program  # torch.export: imported by the jobs that use it

    path = Path(ref.path)
    with _checked(path) as loadable:
        program = load_program(loadable, ref.penultimate_node, ref.preprocess, ref.label_space, device)
    return _loaded(
        program.module, program.preprocess, path, "checkpoint", program.architecture or PROGRAM, path.name,
        None, program.label_space, program.penultimate, program.warnings, device=device,
    )


@contextmanager
def _checked(path: Path) -> Iterator[Path]:
    """The file torch may open for the checkpoint at ``path``, once it passed the static check: a zip
    is rewritten from the bytes the check read (``archive_check.checked_copy``) into a private
    temporary folder, removed once loaded, so torch's own zip reader never sees the upload."""
    with tempfile.TemporaryDirectory(prefix="zootriage-checked-") as folder:
        yield checked_copy(path, path.name, Path(folder))


def _head_input(model: nn.Module, preprocess: Preprocess) -> tuple[nn.Module, str]:
    head = find_output_linear(model, (preprocess.channels, *preprocess.crop))
    return HeadInputPenultimate(model, model.get_submodule(head)), f"input of {head}"


def _torchvision_default_preprocess(arch: str) -> Preprocess:
    from zootriage.core.zoo import torchvision_zoo

    return from_torchvision(torchvision_zoo.weights_enum(arch, "DEFAULT").transforms())


def _timm_classes(model: nn.Module) -> int:
    return int(model.num_classes)  # type: ignore[arg-type]


def _loaded(
    module: nn.Module, preprocess: Preprocess, path: Path, source: str, architecture: str, weights: str,
    acc1: float | None, label_space: str | None, penultimate: str, warnings: tuple[str, ...] = (),
    device: torch.device | None = None,
) -> LoadedModel:
    info = ModelInfo(
        source=source,
        architecture=architecture,
        weights=weights,
        acc1=acc1,
        num_params=sum(p.numel() for p in module.parameters()),
        num_classes=_logit_count(module, preprocess, device or torch.device("cpu")),
        label_space=label_space,
        penultimate=penultimate,
        warnings=warnings,
    )
    return LoadedModel(module, preprocess, info, sha256_file(path))


def _logit_count(module: nn.Module, preprocess: Preprocess, device: torch.device) -> int:
    """The number of logits, from one image of zeros on the device the module is on."""
    with torch.inference_mode():
        _, logits = module(torch.zeros((1, preprocess.channels, *preprocess.crop), device=device))
    return int(logits.shape[-1])
