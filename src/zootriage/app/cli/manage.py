"""Client commands that manage runs and list what a service holds: ``archive`` and ``restore`` a run,
``uploads`` and ``jobs`` (a page at a time, newest first). Like every client command they import only
httpx, typer, rich and pydantic, print ``--json`` on request and exit 2 with one line on any error; an
id goes to the service as typed (the full id or its first 8 or more hex digits).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from zootriage.app.cli.browse import RUN_ID_HELP, _more, _tags
from zootriage.app.cli.client import (
    DEFAULT_URL,
    ApiKey,
    AsJson,
    Client,
    Url,
    _errors_exit,
    _print_json,
    id_path,
    out,
)
from zootriage.app.cli.tables import Column, fitted_table
from zootriage.app.cli.terminal_text import escape

Limit = Annotated[int, typer.Option(min=1, help="rows (one page)")]
PageCursor = Annotated[str | None, typer.Option(help="the next page, as the previous one printed")]


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"


def _when(stamp: str | None) -> str:
    return stamp[:19].replace("T", " ") if stamp else "-"


def _archive_call(run_id: str, url: str, api_key: str | None, action: str, as_json: bool) -> None:
    with _errors_exit():
        client = Client(url, api_key)
        run = client.call("POST", f"/v1/runs/{id_path(run_id)}/{action}").json()
    if as_json:
        _print_json(run)
        return
    state = f"archived since {_when(run['archived_at'])}" if run["archived_at"] else "not archived"
    out.print(f"run {run['id']} ({escape(run['label'])}): {state}")


def archive(
    run_id: Annotated[str, typer.Argument(help=RUN_ID_HELP)],
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Archive a run: it leaves the history (``history --archived include`` lists it), the stored-run
    recommendations and the trends, and is still shown by ``show``; nothing is deleted."""
    _archive_call(run_id, url, api_key, "archive", as_json)


def restore(
    run_id: Annotated[str, typer.Argument(help=RUN_ID_HELP)],
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Bring an archived run back into the history and every listing."""
    _archive_call(run_id, url, api_key, "restore", as_json)


def uploads(
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    limit: Limit = 20,
    cursor: PageCursor = None,
    as_json: AsJson = False,
) -> None:
    """Uploaded checkpoints, newest first: the id a job names (``ckpt:ID``), file name, name and size."""
    with _errors_exit():
        client = Client(url, api_key)
        params: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        page = client.call("GET", "/v1/checkpoints", params=params).json()
    if as_json:
        _print_json(page)
        return
    layout = [
        Column("upload", 64, priority=10, no_wrap=True),
        Column("created", 19, priority=6, no_wrap=True),
        Column("file", 12, priority=9),
        Column("name", 10, priority=8),
        Column("format", 8, priority=4, no_wrap=True),
        Column("MiB", 7, priority=5, justify="right", no_wrap=True),
        Column("tags", 8, priority=2),
    ]
    rows = [
        [
            item["id"], _when(item["created_at"]), escape(item["filename"] or "-"),
            escape(item["name"] or "-"), item["format"], f"{item['size_bytes'] / 2**20:.1f}",
            escape(_tags(item["tags"])),
        ]
        for item in page["items"]
    ]
    out.print(fitted_table(layout, rows, out.width))
    _more(page["next_cursor"])


def jobs(
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    status: Annotated[JobStatus | None, typer.Option(help="only jobs in this state")] = None,
    limit: Limit = 20,
    cursor: PageCursor = None,
    as_json: AsJson = False,
) -> None:
    """Jobs, newest first: state, stage and progress, the run each produced or the error it failed on."""
    with _errors_exit():
        client = Client(url, api_key)
        params: dict[str, Any] = {"limit": limit}
        if status is not None:
            params["status"] = status.value
        if cursor:
            params["cursor"] = cursor
        page = client.call("GET", "/v1/jobs", params=params).json()
    if as_json:
        _print_json(page)
        return
    layout = [
        Column("job", 36, priority=10, no_wrap=True),
        Column("created", 19, priority=6, no_wrap=True),
        Column("status", 9, priority=9, no_wrap=True),
        Column("progress", 12, priority=7, no_wrap=True),
        Column("name", 10, priority=5),
        Column("run / error", 16, priority=8),
    ]
    rows = []
    for job in page["items"]:
        progress = job["progress"]
        done = f"{progress['stage'] or '-'} {progress['done']}/{progress['total']}"
        error = job["error"]
        outcome = job["run_id"] or (f"{error['code']}: {error['message']}" if error else "-")
        rows.append([
            job["id"], _when(job["created_at"]), job["status"], escape(done), escape(job["name"] or "-"),
            escape(outcome),
        ])
    out.print(fitted_table(layout, rows, out.width))
    _more(page["next_cursor"])


def register(app: typer.Typer) -> None:
    for command in (archive, restore, uploads, jobs):
        app.command()(command)
