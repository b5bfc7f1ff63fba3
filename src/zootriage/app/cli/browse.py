"""Client commands that read and manage what a service holds: ``history``, ``show``, ``label``,
``gates`` and ``cancel`` (``archive``, ``restore``, ``uploads`` and ``jobs`` are in ``app.cli.manage``).
Like every client command they import only httpx, typer, rich and pydantic, take ``--url``/``--api-key``
(or ``ZOOTRIAGE_URL``/``ZOOTRIAGE_API_KEY``), print ``--json`` on request and exit 2 with one line on
any error. An id is sent as the user typed it: the service takes a unique prefix of 8 or more hex
digits as well as the full id, and says when a prefix is ambiguous.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from zootriage.app.cli.client import (
    DEFAULT_URL,
    GATE_RESULT,
    ApiKey,
    AsJson,
    Client,
    ProjectOpt,
    ServiceError,
    Url,
    _errors_exit,
    _fmt,
    _print_json,
    _warn,
    err,
    id_path,
    out,
    tag_map,
)
from zootriage.app.cli.tables import Column, fitted_table
from zootriage.app.cli.terminal_text import escape, terminal_safe

HISTORY_MARKERS = ("dimension", "utilization", "id_accuracy", "logme")
RUN_ID_HELP = "run id (as history prints it), or its first 8 or more hex digits"


class Order(StrEnum):
    asc = "asc"
    desc = "desc"


class ArchivedRuns(StrEnum):
    exclude = "exclude"
    include = "include"
    only = "only"


def _tags(tags: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in tags.items())


def _more(next_cursor: str | None) -> None:
    if next_cursor:  # one plain line (rich would wrap the token at the terminal's width)
        sys.stderr.write(f"more: repeat with --cursor {terminal_safe(next_cursor)}\n")


def history(
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    architecture: Annotated[str | None, typer.Option(help="only this architecture")] = None,
    name: Annotated[str | None, typer.Option(help="only runs with this name")] = None,
    search: Annotated[
        str | None, typer.Option("--search", help="only runs whose name contains this text, in any case")
    ] = None,
    archived: Annotated[
        ArchivedRuns, typer.Option(help="exclude archived runs (default), include them, or only them")
    ] = ArchivedRuns.exclude,
    tag: Annotated[list[str] | None, typer.Option(help="only key=value runs; repeat: all must hold")] = None,
    marker: Annotated[
        str | None, typer.Option(help="filter on this marker with --min/--max (runs without it drop out)")
    ] = None,
    marker_min: Annotated[float | None, typer.Option("--min", help="the marker's lower bound")] = None,
    marker_max: Annotated[float | None, typer.Option("--max", help="the marker's upper bound")] = None,
    weights: Annotated[str | None, typer.Option(help="only runs of these weights (sha256)")] = None,
    created_after: Annotated[str | None, typer.Option(help="ISO date or time, inclusive")] = None,
    created_before: Annotated[str | None, typer.Option(help="ISO date or time")] = None,
    sort: Annotated[str, typer.Option(help="created_at or a marker name")] = "created_at",
    order: Annotated[Order, typer.Option(help="asc or desc")] = Order.desc,
    limit: Annotated[int, typer.Option(min=1, help="rows (one page)")] = 20,
    cursor: Annotated[str | None, typer.Option(help="the next page, as the previous one printed")] = None,
    columns: Annotated[
        str | None, typer.Option(help="markers to show, comma-separated (default: the sort marker and "
                                 + ", ".join(HISTORY_MARKERS) + ")")
    ] = None,
    project: ProjectOpt = None,
    as_json: AsJson = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="the whole filtered history as CSV")] = False,
) -> None:
    """The run history as a table (or JSON, or CSV): filters, ordering by any marker, cursor paging."""
    with _errors_exit():
        client = Client(url, api_key)
        given = {
            "architecture": architecture, "name": name, "name_contains": search, "tag": tag,
            "archived": None if archived is ArchivedRuns.exclude else archived.value, "marker": marker,
            "min": marker_min,
            "max": marker_max, "weights": weights, "created_after": created_after,
            "created_before": created_before, "cursor": cursor, "project": project,
        }
        params: dict[str, Any] = {
            "sort": sort, "order": order.value, "limit": limit,
            **{k: v for k, v in given.items() if v is not None},
        }
        if as_csv:
            params.pop("cursor", None)
            table = client.call("GET", "/v1/runs", params={**params, "format": "csv"})
            kind = table.headers.get("content-type", "").split(";")[0].strip()
            if kind != "text/csv":  # a proxy's page, or a service that is not zootriage's
                raise ServiceError(f"GET /v1/runs?format=csv answered {kind or 'no content type'}, not CSV")
            sys.stdout.write(table.text)
            return
        page = client.call("GET", "/v1/runs", params=params).json()
        if as_json:
            _print_json(page)
            return
        picked = [m.strip() for m in columns.split(",") if m.strip()] if columns else list(HISTORY_MARKERS)
        first = [m for m in (sort, marker) if m and m != "created_at"]
        shown = list(dict.fromkeys([*first, *picked]))
        layout = [
            Column("run", 36, priority=10, no_wrap=True),
            Column("created", 19, priority=4, no_wrap=True),
            Column("label", 12, priority=9),
            Column("architecture", 10, priority=2),
            Column("tags", 8, priority=1),
            *(Column(m, 9, priority=8 - min(i, 5), justify="right") for i, m in enumerate(shown)),
        ]
        rows = []
        for run in page["items"]:
            label = escape(run["label"]) + (" [yellow](!)[/yellow]" if run["warnings"] else "")
            label += " [dim](archived)[/dim]" if run.get("archived_at") else ""
            rows.append([
                run["id"], run["created_at"][:19].replace("T", " "), label,
                escape(run["architecture"] or "-"), escape(_tags(run["tags"])),
                *(_fmt(run["markers"].get(m)) for m in shown),
            ])
        out.print(fitted_table(layout, rows, out.width))
        if any(run["warnings"] for run in page["items"]):
            err.print("[yellow](!)[/yellow] runs with warnings: see `zootriage show RUN`")
        _more(page["next_cursor"])


def _noise(value: float | None, std: float | None) -> str:
    """The std relative to the value: how much of it the GLUE repeats leave uncertain."""
    if value is None or std is None or value == 0:
        return ""
    return f"{100 * std / abs(value):.1f}%"


def show(
    run_id: Annotated[str, typer.Argument(help=RUN_ID_HELP)],
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """One run: what was scored and how, and every marker with its std over the GLUE repeats."""
    with _errors_exit():
        client = Client(url, api_key)
        run = client.call("GET", f"/v1/runs/{id_path(run_id)}").json()
    if as_json:
        _print_json(run)
        return
    protocol = run["protocol"]
    sampling = run["sampling"]
    facts = [
        ("run", run["id"]),
        ("label", run["label"]),
        ("created", run["created_at"][:19].replace("T", " ")),
        ("architecture", run["architecture"] or "-"),
        ("weights", f"sha256 {run['weights_sha256']}"),
        ("dataset", f"{_ref(run['dataset'])}, fingerprint {run['dataset_fingerprint'][:16]}"),
        ("sample", f"{run['n_images']} images; classes {_fmt(sampling.get('classes'))}, per class "
                   f"{_fmt(sampling.get('per_class'))}, seed {_fmt(sampling.get('seed'))}"),
        ("protocol", ", ".join(f"{k} {_fmt(v)}" for k, v in protocol.items())),
        ("device", run["device"]),
        ("timings", ", ".join(f"{k} {v:.1f}s" for k, v in run["timings"].items()
                              if isinstance(v, int | float))),
        ("tags", _tags(run["tags"]) or "-"),
        ("description", run.get("description") or "-"),
        *([("archived", run["archived_at"][:19].replace("T", " "))] if run.get("archived_at") else []),
    ]
    for key, value in facts:
        out.print(f"[bold]{key:<12}[/bold] {escape(str(value))}")
    layout = [
        Column("marker", 14, priority=10, no_wrap=True),
        Column("value", 9, priority=9, justify="right", no_wrap=True),
        Column("± std", 9, priority=8, justify="right", no_wrap=True),
        Column("noise", 6, priority=7, justify="right", no_wrap=True),
        Column("note", 12, priority=5),
    ]
    rows = []
    for m in run["markers"]:
        if m["applicable"] and m["value"] is not None:
            std = _fmt(m["std"]) if m["std"] is not None else ""
            noise = _noise(m["value"], m["std"])
            rows.append([m["name"], _fmt(m["value"]), std, noise, escape(m["reason"] or "")])
        else:
            rows.append([m["name"], "n/a", "", "", escape(m["reason"] or "not applicable")])
    out.print(fitted_table(layout, rows, out.width))
    if protocol.get("repeats") == 1:
        err.print("one GLUE repeat: the markers have no noise estimate, so they cannot decide a gate")
    _warn(run["label"], run["warnings"])


def _ref(ref: dict[str, Any]) -> str:
    """A stored reference back in the short form the commands take (``builtin:mnist``, ...)."""
    source = ref.get("source")
    if source == "torchvision" and "arch" in ref:
        return f"tv:{ref['arch']}.{ref.get('weights', 'DEFAULT')}"
    if source == "timm":
        return f"timm:{ref['name']}"
    if source == "torchvision":
        return f"torchvision:{ref['name']}:{ref['path']}"
    if source in ("builtin",):
        return f"builtin:{ref['name']}"
    if source in ("folder", "archive"):
        return f"{source}:{ref['path']}"
    return str(ref)


def gates(
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    passed: Annotated[
        bool | None, typer.Option("--passed/--not-passed", help="only gates that passed, or only the others")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="rows (one page)")] = 20,
    cursor: Annotated[str | None, typer.Option(help="the next page, as the previous one printed")] = None,
    project: ProjectOpt = None,
    as_json: AsJson = False,
) -> None:
    """Gate decisions, newest first: status, the two sides and the rules that did not pass."""
    with _errors_exit():
        client = Client(url, api_key)
        params: dict[str, Any] = {"limit": limit, **({"project": project} if project else {})}
        if passed is not None:
            params["passed"] = str(passed).lower()
        if cursor:
            params["cursor"] = cursor
        page = client.call("GET", "/v1/gates", params=params).json()
    if as_json:
        _print_json(page)
        return
    layout = [
        Column("gate", 36, priority=10, no_wrap=True),
        Column("created", 19, priority=5, no_wrap=True),
        Column("result", 6, priority=9, no_wrap=True),
        Column("candidate", 12, priority=8),
        Column("baseline", 12, priority=7),
        Column("rules not passed", 16, priority=6),
    ]
    rows = []
    for gate in page["items"]:
        not_passed = "; ".join(r["rule"] for r in gate["rules"] if r["status"] != "passed")
        rows.append([
            gate["id"], gate["created_at"][:19].replace("T", " "), GATE_RESULT[gate["status"]],
            escape(_fmt(gate["candidate_label"])), escape(_fmt(gate["baseline_label"])), escape(not_passed),
        ])
    out.print(fitted_table(layout, rows, out.width))
    _more(page["next_cursor"])


def cancel(
    job_id: Annotated[str, typer.Argument(help="job id (as submit printed it), or its first 8+ hex digits")],
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Cancel a queued or running job (a job that has finished cannot be: exit 2)."""
    with _errors_exit():
        client = Client(url, api_key)
        job = client.call("DELETE", f"/v1/jobs/{id_path(job_id)}").json()
    if as_json:
        _print_json(job)
        return
    out.print(f"job {job['id']}: {job['status']}")


def label(
    run_id: Annotated[str, typer.Argument(help=RUN_ID_HELP)],
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    name: Annotated[str | None, typer.Option("--name", help="the run's new name")] = None,
    clear_name: Annotated[bool, typer.Option("--clear-name", help="remove the run's name")] = False,
    description: Annotated[
        str | None, typer.Option("--description", help="the run's new free-text description")
    ] = None,
    clear_description: Annotated[
        bool, typer.Option("--clear-description", help="remove the run's description")
    ] = False,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="key=value to set, repeatable")] = None,
    untag: Annotated[list[str] | None, typer.Option("--untag", help="tag key to remove, repeatable")] = None,
    as_json: AsJson = False,
) -> None:
    """Rename, describe or retag a run after scoring (labels change no number); other tags stay as they
    are."""
    with _errors_exit():
        if name is not None and clear_name:
            raise ServiceError("--name and --clear-name contradict each other: give one")
        if description is not None and clear_description:
            raise ServiceError("--description and --clear-description contradict each other: give one")
        tags: dict[str, str | None] = {**tag_map(tag), **dict.fromkeys(untag or [])}
        if name is None and not clear_name and description is None and not clear_description and not tags:
            raise ServiceError(
                "nothing to change: give --name, --clear-name, --description, --clear-description, --tag "
                "or --untag"
            )
        patch: dict[str, Any] = {"tags": tags}
        if name is not None or clear_name:
            patch["name"] = name
        if description is not None or clear_description:
            patch["description"] = description
        client = Client(url, api_key)
        run = client.call("PATCH", f"/v1/runs/{id_path(run_id)}", json=patch).json()
    if as_json:
        _print_json(run)
        return
    tagged = f" [{_tags(run['tags'])}]" if run["tags"] else ""
    out.print(f"run {run['id']}: {escape(run['label'] + tagged)}")


def register(app: typer.Typer) -> None:
    for command in (history, show, label, gates, cancel):
        app.command()(command)

