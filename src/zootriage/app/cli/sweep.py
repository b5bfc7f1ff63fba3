"""``zootriage sweep``: score many models on one dataset and protocol, follow one progress, read the
ranking. ``start`` (a list of references, ``--preset v1v2`` or ``--timm FILTER``), ``show``, ``list`` and
``cancel``. A light client command like ``rank``: httpx, typer, rich and pydantic only."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from zootriage.app.cli.client import (
    DEFAULT_URL,
    MODEL_HELP,
    ApiKey,
    AsJson,
    Client,
    ProjectOpt,
    RunName,
    RunTags,
    ServiceError,
    Timeout,
    TriageRule,
    Url,
    _errors_exit,
    _fmt,
    _print_json,
    err,
    id_path,
    model_json,
    out,
    project_params,
    tag_map,
)
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

sweep_app = typer.Typer(
    name="sweep", help="Score many models on one dataset and rank them.", no_args_is_help=True
)
SweepId = Annotated[str, typer.Argument(help="the sweep's id")]


def _follow(client: Client, sweep_id: str, timeout: float, poll: float = 1.0) -> dict[str, Any]:
    """Poll the sweep with one bar (the fraction of its models' stages) until it is no longer running."""
    deadline = time.monotonic() + timeout
    bars = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=err)
    with bars:
        task = bars.add_task("sweep", total=1.0)
        while True:
            sweep = dict(client.call("GET", f"/v1/sweeps/{id_path(sweep_id)}").json())
            counts = ", ".join(f"{n} {status}" for status, n in sorted(sweep["progress"]["counts"].items()))
            described = escape(f"{sweep_id[:8]} {counts}")  # a bar's description is markup
            bars.update(task, completed=sweep["progress"]["fraction"], description=described)
            if sweep["status"] != "running":
                return sweep
            if time.monotonic() > deadline:
                raise ServiceError(f"sweep {sweep_id} did not finish in time (still {counts})")
            time.sleep(poll)


def _print(sweep: dict[str, Any]) -> None:
    progress = sweep["progress"]
    counts = ", ".join(f"{n} {status}" for status, n in sorted(progress["counts"].items()))
    done = f"{progress['finished']}/{progress['total']}"
    title = f"{sweep['name'] or sweep['id']}: {sweep['status']}, {done} ({counts})"
    out.print(escape(title))
    jobs = Table("#", "model", "status", "stage", "job", "error")
    for member in sweep["jobs"]:
        job = member["job"] or {}
        error = job.get("error") or {}
        jobs.add_row(
            str(member["position"]),
            escape(member["label"] or _reference(member["model"])),
            member["status"],
            escape(str((job.get("progress") or {}).get("stage") or "-")),
            str(job.get("id", "-"))[:8],
            escape(f"{error['code']}: {error['message']}" if error else ""),
        )
    out.print(jobs)
    ranking = sweep.get("ranking")
    if not ranking:
        return
    table = Table("rank", "model", "dimension", "utilization", "acc rank")
    for entry in ranking["entries"]:
        markers = {name: stat["value"] for name, stat in entry["markers"].items()}
        table.add_row(
            _fmt(entry["rank"]),
            escape(entry["label"]),
            _fmt(markers.get("dimension")),
            _fmt(markers.get("utilization")),
            _fmt(entry["id_accuracy_rank"]),
        )
    out.print(table)
    out.print(
        f"{escape(ranking['rule']['name'])} picks {escape(_fmt(ranking['pick']))} "
        f"({escape(ranking['reason'])})"
    )


def _reference(model: dict[str, Any]) -> str:
    if model.get("source") == "torchvision":
        return f"tv:{model['arch']}.{model['weights']}"
    if model.get("source") == "timm":
        return f"timm:{model['name']}"
    return f"ckpt:{str(model.get('path', ''))[:12]}"


@sweep_app.command("start")
def start(
    dataset: Dataset,
    models: Annotated[list[str] | None, typer.Argument(help=MODEL_HELP)] = None,
    preset: Annotated[str | None, typer.Option(help="v1v2: every torchvision v1/v2 pair")] = None,
    timm_filter: Annotated[
        str | None, typer.Option("--timm", help="timm pretrained names, e.g. 'resnet50.*'")
    ] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    classes: Classes = None,
    per_class: PerClass = None,
    split: Split = None,
    seed: Seed = None,
    n_t: NT = None,
    points_per_class: PointsPerClass = None,
    repeats: Repeats = None,
    rule: TriageRule = None,
    name: RunName = None,
    tag: RunTags = None,
    project: ProjectOpt = None,
    wait: Annotated[bool, typer.Option(help="follow the sweep until it ends and print its ranking")] = True,
    timeout: Timeout = 24 * 3600,
    as_json: AsJson = False,
) -> None:
    """Start a sweep over MODELS, --preset or --timm (exactly one), queued a few jobs at a time."""
    with _errors_exit():
        given = [bool(models), preset is not None, timm_filter is not None]
        if sum(given) != 1:
            raise ServiceError("give models, --preset or --timm (exactly one)")
        client = Client(url, api_key, timeout)
        selection: Any
        if preset is not None:
            selection = {"preset": preset}
        elif timm_filter is not None:
            selection = {"timm_filter": timm_filter}
        else:
            selection = [model_json(client, text) for text in models or []]
        scoring = Scoring(dataset, classes, per_class, split, seed, n_t, points_per_class, repeats)
        named = {"rule": rule} if rule else {}  # none: the server's default rule
        body = {"models": selection, **scoring.body(), **named, "name": name, "tags": tag_map(tag)}
        sweep = dict(client.call("POST", "/v1/sweeps", json=body, params=project_params(project)).json())
        err.print(f"sweep {sweep['id']}: {sweep['progress']['total']} models")
        if wait:
            sweep = _follow(client, sweep["id"], timeout)
        _print_json(sweep) if as_json else _print(sweep)


@sweep_app.command("show")
def show(sweep_id: SweepId, url: Url = DEFAULT_URL, api_key: ApiKey = None, as_json: AsJson = False) -> None:
    """A sweep's progress, jobs and (once it has ended) ranking."""
    with _errors_exit():
        sweep = dict(Client(url, api_key).call("GET", f"/v1/sweeps/{id_path(sweep_id)}").json())
        _print_json(sweep) if as_json else _print(sweep)


@sweep_app.command("list")
def list_sweeps(
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="sweeps to show")] = 20,
    project: ProjectOpt = None,
    as_json: AsJson = False,
) -> None:
    """Sweeps, newest first, with their progress: of --project alone, else of every project the key
    may use."""
    with _errors_exit():
        params = {"limit": limit, **project_params(project)}
        page = Client(url, api_key).call("GET", "/v1/sweeps", params=params).json()
        if as_json:
            _print_json(page)
            return
        table = Table("id", "name", "status", "done", "progress", "created")
        for item in page["items"]:
            progress = item["progress"]
            table.add_row(
                item["id"][:8],
                escape(item["name"] or "-"),
                item["status"],
                f"{progress['finished']}/{progress['total']}",
                f"{100 * progress['fraction']:.0f}%",
                item["created_at"][:19],
            )
        out.print(table)


@sweep_app.command("cancel")
def cancel(sweep_id: SweepId, url: Url = DEFAULT_URL, api_key: ApiKey = None) -> None:
    """Cancel the sweep's jobs still waiting or running."""
    with _errors_exit():
        sweep = Client(url, api_key).call("DELETE", f"/v1/sweeps/{id_path(sweep_id)}").json()
        out.print(f"sweep {escape(sweep['id'])} cancelled ({sweep['progress']['counts']})")


def register(app: typer.Typer) -> None:
    app.add_typer(sweep_app)
