"""``zootriage export``: turn a model the user can build (their own code) and a weights file into a
self-describing ``.pt2`` that uploads and scores with its own preprocessing and label space.

This runs the user's factory in the user's own process, on their machine: importing their code is
what they ask for here. The service never does it; it receives only the exported program. Weights are
read with ``weights_only`` loaders (``core.zoo.weights.read_state_dict``), so the weights file itself
runs no code. Bad input exits with status 2 and one line.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from zootriage.app.cli.exits import BAD_INPUT
from zootriage.app.cli.terminal_text import escape, terminal_safe
from zootriage.app.labels import BadLabel, check_name

err = Console(stderr=True)


def _fail(message: str) -> typer.Exit:
    err.print(f"[red]error[/red] {escape(message)}")
    return typer.Exit(BAD_INPUT)


def _factory(spec: str) -> object:
    """``MODULE:FACTORY`` imported from the current folder or the installed packages, and called."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise _fail(f"{spec!r}: expected MODULE:FACTORY, e.g. mypackage.models:build_net")
    sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise _fail(f"cannot import {module_name}: {exc}") from None
    finally:
        sys.path.remove(str(Path.cwd()))
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise _fail(f"{module_name} has no callable {attribute!r}")
    return factory()


def _shape(text: str) -> tuple[int, int, int]:
    parts = text.split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise _fail(f"--input-shape {text!r}: expected C,H,W, e.g. 3,224,224")
    c, h, w = (int(p) for p in parts)
    return c, h, w


def export(
    factory: Annotated[str, typer.Argument(help="MODULE:FACTORY, a callable that returns the nn.Module")],
    weights: Annotated[Path, typer.Option(help="its state_dict (.safetensors, .pt, .pth, .bin)")],
    out: Annotated[Path, typer.Option(help="the .pt2 to write")],
    preprocess: Annotated[str | None, typer.Option(help="Preprocess JSON (see the README)")] = None,
    preset: Annotated[str | None, typer.Option(help="imagenet or mnist, instead of --preprocess")] = None,
    label_space: Annotated[str | None, typer.Option(help="what the logits index: imagenet-1k, ...")] = None,
    input_shape: Annotated[str | None, typer.Option(help="C,H,W (default: the preprocessing's)")] = None,
    name: Annotated[str | None, typer.Option(help="a name the upload and its runs are shown by")] = None,
    architecture: Annotated[str | None, typer.Option(help="default: the module's class name")] = None,
) -> None:
    """Export MODULE:FACTORY with --weights as a .pt2 that carries its preprocessing and label space."""
    from zootriage.core.errors import ZooError
    from zootriage.core.zoo.exporting import export_program
    from zootriage.core.zoo.preprocess import PRESETS, Preprocess
    from zootriage.core.zoo.program_metadata import ProgramMetadata
    from zootriage.core.zoo.state_dicts import load_strict
    from zootriage.core.zoo.weights import read_state_dict

    if (preprocess is None) == (preset is None):
        raise _fail("give exactly one of --preprocess JSON and --preset (imagenet, mnist)")
    if out.suffix != ".pt2":
        raise _fail(f"--out {out.name}: a program's file name ends in .pt2")
    if out.is_dir():
        raise _fail(f"--out {out}: is a folder, not a file")
    try:
        chosen = PRESETS[preset] if preset else Preprocess.model_validate_json(preprocess or "")
        metadata = ProgramMetadata(
            preprocess=chosen,
            label_space=label_space,
            architecture=architecture,
            name=check_name(name) if name is not None else None,
        )
    except KeyError:
        raise _fail(f"--preset {preset!r}: one of {sorted(PRESETS)}") from None
    except ValidationError as exc:
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise _fail(f"invalid --preprocess or --label-space: {detail}") from None
    except BadLabel as exc:
        raise _fail(f"--name: {exc}") from None
    shape = _shape(input_shape) if input_shape else (chosen.channels, *chosen.crop)
    model = _factory(factory)
    from torch import nn

    if not isinstance(model, nn.Module):
        raise _fail(f"{factory} returned a {type(model).__name__}, not a torch nn.Module")
    try:
        load_strict(model, read_state_dict(weights), weights.name)
        if metadata.architecture is None:
            metadata = metadata.model_copy(update={"architecture": type(model).__name__})
        export_program(model, shape, metadata, out)
    except ZooError as exc:
        raise _fail(f"{exc.code}: {exc.message}") from None
    except OSError as exc:  # the program could not be written: ``out`` is left as it was
        raise _fail(str(exc)) from None
    shown = terminal_safe(f"{out} ({metadata.architecture}, input {shape}, label space {label_space or '-'})")
    print(f"wrote {shown}")


def register(app: typer.Typer) -> None:
    app.command("export")(export)
