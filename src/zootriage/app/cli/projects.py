"""``zootriage projects list|create`` and ``zootriage alias set|list|show|history``: projects and their
baseline aliases, over HTTP like the other client commands (``app.cli.client``). An alias is moved
with ``alias set PROJECT NAME RUN`` (RUN: the run's id or its first 8 or more hex digits) and used by
``zootriage gate --project PROJECT --baseline alias:NAME``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from zootriage.app.cli.client import (
    DEFAULT_URL,
    ApiKey,
    AsJson,
    Client,
    Url,
    _errors_exit,
    _fmt,
    _print_json,
    out,
    segment,
)
from zootriage.app.cli.terminal_text import escape

projects_app = typer.Typer(help="List and create projects.", no_args_is_help=True)
alias_app = typer.Typer(help="Baseline aliases of a project: set, list, show, history.", no_args_is_help=True)

Project = Annotated[str, typer.Argument(help="the project (see `zootriage projects list`)")]
AliasName = Annotated[str, typer.Argument(help="the alias, e.g. production")]


def _alias_path(project: str, name: str | None = None) -> str:
    """``/v1/projects/{project}/aliases[/{name}]``, each name one escaped path segment."""
    path = f"/v1/projects/{segment(project, 'a project')}/aliases"
    return path if name is None else f"{path}/{segment(name, 'an alias')}"


def _when(text: str | None) -> str:
    return text[:19].replace("T", " ") if text else "-"


def _run(run_id: str | None, label: str | None = None) -> str:
    if run_id is None:
        return "(deleted run)"
    return f"{run_id}" + (f" ({escape(label)})" if label else "")


@projects_app.command("list")
def list_projects(url: Url = DEFAULT_URL, api_key: ApiKey = None, as_json: AsJson = False) -> None:
    """The projects your key may use, with their runs, jobs and aliases."""
    with _errors_exit():
        answer = Client(url, api_key).call("GET", "/v1/projects").json()
    if as_json:
        _print_json(answer)
        return
    for p in answer["items"]:
        about = f"  {escape(p['description'])}" if p["description"] else ""
        out.print(f"{escape(p['name'])}: {p['runs']} runs, {p['jobs']} jobs, {p['aliases']} aliases{about}")


@projects_app.command("create")
def create_project(
    name: Annotated[str, typer.Argument(help="lower-case letters, digits, _ . - (at most 64)")],
    description: Annotated[str | None, typer.Option(help="what the project is for")] = None,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Create a project (a write key not limited to projects)."""
    with _errors_exit():
        body: dict[str, Any] = {"name": name, "description": description}
        made = Client(url, api_key).call("POST", "/v1/projects", json=body).json()
    out.print(f"created project {escape(made['name'])}")


@alias_app.command("set")
def set_alias(
    project: Project,
    name: AliasName,
    run: Annotated[str, typer.Argument(help="the run: its id or its first 8 or more hex digits")],
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Point an alias at a run (creating it on first use); the move is kept in its history."""
    with _errors_exit():
        path = _alias_path(project, name)
        answer = Client(url, api_key).call("PUT", path, json={"run": run}).json()
    if as_json:
        _print_json(answer)
        return
    moved = answer["moved"]
    if moved is None:
        now = _run(answer["run_id"], answer["run_label"])
        out.print(f"{escape(project)}/{escape(name)} already points to {now}")
    else:
        was = f" (was {moved['from_run_id']})" if moved["from_run_id"] else " (new alias)"
        out.print(f"{escape(project)}/{escape(name)} → {_run(answer['run_id'], answer['run_label'])}{was}")


@alias_app.command("list")
def list_aliases(
    project: Project, url: Url = DEFAULT_URL, api_key: ApiKey = None, as_json: AsJson = False
) -> None:
    """The project's aliases and the runs they point to."""
    with _errors_exit():
        answer = Client(url, api_key).call("GET", _alias_path(project)).json()
    if as_json:
        _print_json(answer)
        return
    for a in answer["items"]:
        out.print(
            f"{escape(a['name'])} → {_run(a['run_id'], a['run_label'])}  (moved {_when(a['updated_at'])})"
        )


@alias_app.command("show")
def show_alias(
    project: Project, name: AliasName, url: Url = DEFAULT_URL, api_key: ApiKey = None, as_json: AsJson = False
) -> None:
    """The run an alias points to now."""
    with _errors_exit():
        a = Client(url, api_key).call("GET", _alias_path(project, name)).json()
    if as_json:
        _print_json(a)
        return
    out.print(f"{escape(project)}/{escape(a['name'])} → {_run(a['run_id'], a['run_label'])}")
    out.print(f"created {_when(a['created_at'])}, moved {_when(a['updated_at'])}")


@alias_app.command("history")
def alias_history(
    project: Project, name: AliasName, url: Url = DEFAULT_URL, api_key: ApiKey = None, as_json: AsJson = False
) -> None:
    """Every move of an alias, oldest first: when, by which key, from which run to which."""
    with _errors_exit():
        answer = Client(url, api_key).call("GET", f"{_alias_path(project, name)}/history").json()
    if as_json:
        _print_json(answer)
        return
    for m in answer["moves"]:
        who = escape(_fmt(m["actor"])) + (
            f" (key {m['actor_key_id']})" if m["actor_key_id"] is not None else ""
        )
        out.print(f"{_when(m['created_at'])}  {who}: {_fmt(m['from_run_id'])} → {m['to_run_id']}")


def register(app: typer.Typer) -> None:
    app.add_typer(projects_app, name="projects")
    app.add_typer(alias_app, name="alias")
