"""``zootriage score``: score one model on one dataset locally, with no service.

Weights come from the local caches (torch hub's, the Hugging Face hub's for timm). Unless
``--download`` is given, the Hugging Face hub is not asked (``HF_HUB_OFFLINE=1``, as the service's
worker does), so a timm model that is not cached fails at once with ``weights_not_available`` instead
of waiting for the hub's retries to time out on a machine without network.

Bad input (an unknown model, a bad checkpoint, a path outside the data roots, ...) prints its error
code and message and exits with status 2, never a traceback. What the API refuses at submit time
(names against the published catalogues, a dataset's path, classes and archive headers) is refused
here the same way before the sandboxed child starts, which takes seconds (an interpreter importing
torch); what only opening can tell (a checkpoint's contents, a folder's images) is the child's to say.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from zootriage.app.cli.exits import BAD_INPUT
from zootriage.app.cli.scoring_options import (
    NT,
    Classes,
    Dataset,
    PerClass,
    PointsPerClass,
    Repeats,
    Scoring,
    Seed,
    Split,
)
from zootriage.app.cli.terminal_text import escape

if TYPE_CHECKING:
    from zootriage.core.data.refs import AnyDatasetRef, Sampling
    from zootriage.core.protocol import Centering
    from zootriage.core.scoring import ScoreResult
    from zootriage.core.zoo.refs import AnyModelRef

MODEL_HELP = "tv:ARCH.WEIGHTS, timm:NAME[.TAG], tv:ARCH@FILE, timm:NAME@FILE, ckpt:FILE.pt2 or a JSON object"


def score(
    model: Annotated[str, typer.Option(help=MODEL_HELP)],
    dataset: Dataset,
    classes: Classes = None,
    per_class: PerClass = None,
    split: Split = None,
    seed: Seed = None,
    n_t: NT = None,
    points_per_class: PointsPerClass = None,
    repeats: Repeats = None,
    centering: Annotated[str, typer.Option(help="none or global")] = "none",
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:1, ...")] = "auto",
    batch_size: Annotated[int, typer.Option(min=1, help="images per forward pass")] = 64,
    data_root: Annotated[
        list[Path] | None, typer.Option(help="where datasets may be read (repeatable; default: .)")
    ] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="feature cache folder")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    download: Annotated[
        bool,
        typer.Option(
            "--download/--no-download",
            help="fetch timm weights missing from the Hugging Face cache (default: fail at once)",
        ),
    ] = False,
) -> None:
    """Extract features with the model's own preprocessing and print every marker."""
    if not download:
        os.environ["HF_HUB_OFFLINE"] = "1"
    from zootriage.core.data.refs import Sampling, parse_dataset_ref
    from zootriage.core.errors import ZooError
    from zootriage.core.markers import Protocol
    from zootriage.core.scoring import score as run_score
    from zootriage.core.zoo.refs import parse_model_ref

    err = Console(stderr=True)
    roots = data_root or [Path.cwd()]
    try:
        model_ref = parse_model_ref(model)
        dataset_ref = parse_dataset_ref(dataset)
        scoring = Scoring(dataset, classes, per_class, split, seed, n_t, points_per_class, repeats)
        protocol = Protocol.model_validate({**scoring.protocol(), "centering": cast("Centering", centering)})
        sampling = Sampling.model_validate(scoring.sampling())
        sampling = sampling.for_repeats(protocol.points_per_class, protocol.repeats)
        _refuse_early(model_ref, dataset_ref, sampling, roots, download)
        with _progress(err) as report:
            result = run_score(
                model_ref,
                dataset_ref,
                sampling,
                protocol,
                device=device,
                progress=report,
                cache=cache_dir,
                data_roots=roots,
                batch_size=batch_size,
            )
    except ZooError as exc:
        hint = " (--download fetches them where the network allows)" if _missing_timm(exc, download) else ""
        err.print(f"[red]error[/red] {exc.code}: {escape(exc.message)}{hint}")
        raise typer.Exit(BAD_INPUT) from None
    except ValueError as exc:  # option values the core validates (pydantic errors are ValueErrors)
        err.print(f"[red]error[/red] bad_option: {escape(str(exc))}")
        raise typer.Exit(BAD_INPUT) from None
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
        return
    out = Console()
    out.print(_summary(result))
    out.print(_table(result))


def _refuse_early(
    model: AnyModelRef, dataset: AnyDatasetRef, sampling: Sampling, roots: list[Path], download: bool
) -> None:
    """The checkpoint's file, then the API's static checks (``core.zoo.checks``, ``core.data.checks``),
    before any child starts.
    Weights missing from the local caches are left to the child where it may fetch them: torchvision's
    always (torch hub, where the network allows), timm's with ``--download``."""
    from zootriage.core.data.archives import ArchiveLimits
    from zootriage.core.data.checks import check_dataset
    from zootriage.core.errors import BadCheckpoint, WeightsNotAvailable
    from zootriage.core.zoo.checks import canonical_model
    from zootriage.core.zoo.refs import CheckpointRef, TimmRef

    if isinstance(model, CheckpointRef) and not Path(model.path).is_file():  # a local file, here
        missing = "is a folder, not a file" if Path(model.path).is_dir() else "no such file"
        raise BadCheckpoint(f"{model.path}: {missing}")
    check_dataset(dataset, sampling, roots, ArchiveLimits())  # first, as in the child: data before weights
    try:
        canonical_model(model)
    except WeightsNotAvailable:
        if isinstance(model, TimmRef) and not download:
            raise


def _missing_timm(exc: Exception, download: bool) -> bool:
    from zootriage.core.errors import WeightsNotAvailable

    return isinstance(exc, WeightsNotAvailable) and not download and "timm" in str(exc)


class _progress:
    """A rich progress bar fed by ``core.scoring``'s ``progress(stage, done, total)`` callback."""

    def __init__(self, console: Console) -> None:
        self.bar = Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> _progress:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self.tasks:
            self.tasks[stage] = self.bar.add_task(stage, total=total)
        self.bar.update(self.tasks[stage], completed=done, total=total)


def _summary(result: ScoreResult) -> str:
    info = result.model
    acc = f", acc@1 {info.acc1}" if info.acc1 is not None else ""
    timings = ", ".join(f"{stage} {seconds:.1f}s" for stage, seconds in result.timings.items())
    cached = " (features from cache)" if result.features_cached else ""
    return (
        f"model    {info.architecture} {info.weights}{acc}, {info.num_params:,} params, "
        f"penultimate: {info.penultimate}\n"
        f"weights  sha256 {result.weights_sha256}\n"
        f"sample   {result.n_images} images, {result.n_classes} classes, {result.feature_dim}-d features, "
        f"fingerprint {result.dataset_fingerprint[:16]}\n"
        f"device   {result.device}; {timings}{cached}"
    )


def _table(result: ScoreResult) -> Table:
    table = Table(title="markers")
    table.add_column("marker")
    table.add_column("value", justify="right")
    table.add_column("std", justify="right")
    table.add_column("note")
    for name, marker in result.markers.items():
        if marker.applicable and marker.value is not None:
            std = f"{marker.std:.4g}" if marker.std is not None else ""
            table.add_row(name, f"{marker.value:.4g}", std, "")
        else:
            table.add_row(name, "n/a", "", marker.reason or "")
    return table


def register(app: typer.Typer) -> None:
    app.command("score")(score)
