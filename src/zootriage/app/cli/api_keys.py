"""``zootriage api-keys create|list|revoke``: manage keys directly in the database the settings name.

Whoever can run these can already read the database, so they need no key themselves; this is how the
first admin key of a deployment is made.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from zootriage.app.cli.exits import BAD_INPUT
from zootriage.app.scopes import DEFAULT_SCOPES, Scope

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

keys_app = typer.Typer(help="Create, list and revoke API keys.", no_args_is_help=True)
LIST_PAGE = 500


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(BAD_INPUT)


@contextmanager
def _database() -> Iterator[Session]:
    """One transaction on the settings' database; unreachable is a message and exit code 2."""
    from sqlalchemy.exc import OperationalError

    from zootriage.app.db.session import session_scope
    from zootriage.app.settings import get_settings

    try:
        with session_scope(get_settings().effective_database_url) as session:
            yield session
    except OperationalError as exc:
        raise _fail(f"cannot use the database: {str(exc.orig).strip().splitlines()[0]}") from None


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment is not None else "-"


@keys_app.command("create")
def create(
    name: Annotated[str, typer.Argument(help="who or what the key is for (at most 128 characters)")],
    scope: Annotated[
        list[Scope] | None,
        typer.Option(help="read, write or admin, each including the ones before it (default: read + write)"),
    ] = None,
    project: Annotated[
        list[str] | None,
        typer.Option(help="limit the key to this project (repeat for several; default: every project)"),
    ] = None,
    store: Annotated[
        bool,
        typer.Option(
            "--store/--no-store",
            help="store its hash in the database, or print it for ZOOTRIAGE_API_KEY_HASHES (read + write)",
        ),
    ] = True,
) -> None:
    """Create a key; it is printed once, only its hash is kept."""
    from zootriage.app.api_keys import create_api_key, hash_key, new_key

    if not store:
        if scope or project:
            raise _fail(
                "a key given by its hash in ZOOTRIAGE_API_KEY_HASHES always has read + write, "
                "in every project"
            )
        key = new_key()
        typer.echo(f"{key}\nZOOTRIAGE_API_KEY_HASHES={hash_key(key)}")
        return
    if not 1 <= len(name) <= 128 or not name.isprintable():
        raise _fail("the name must be 1 to 128 printable characters")
    with _database() as session:
        projects = _existing_projects(session, project) if project else None
        issued = create_api_key(session, name, frozenset(scope or DEFAULT_SCOPES), projects)
    typer.echo(issued.key)


def _existing_projects(session: Session, names: list[str]) -> frozenset[str]:
    """The project names given, each checked to be a project (the default one is made if needed)."""
    from zootriage.app.services.errors import ServiceError
    from zootriage.app.services.projects import check_projects_exist

    try:
        check_projects_exist(session, frozenset(names))
    except ServiceError as exc:
        raise _fail(exc.message) from None
    return frozenset(names)


@keys_app.command("list")
def list_keys() -> None:
    """Every key: id, name, scopes, projects, created, last used, revoked (never the secret)."""
    from zootriage.app.api_keys import list_api_keys

    typer.echo(
        f"{'id':>5}  {'name':<24} {'scopes':<18} {'projects':<18} {'created':<19}  {'last used':<19}  "
        "revoked"
    )
    with _database() as session:
        after = 0
        while rows := list_api_keys(session, after_id=after, limit=LIST_PAGE):
            for row in rows:
                projects = "(all)" if row.projects is None else ",".join(row.projects)
                typer.echo(
                    f"{row.id:>5}  {row.name:<24} {','.join(row.scopes):<18} {projects:<18} "
                    f"{_when(row.created_at):<19}  {_when(row.last_used_at):<19}  {_when(row.revoked_at)}"
                )
            after = rows[-1].id


@keys_app.command("revoke")
def revoke(
    key_id: Annotated[int, typer.Argument(min=1, max=2**62, help="the key's id (see `api-keys list`)")],
) -> None:
    """Revoke a key: every request with it is refused from now on."""
    from zootriage.app.api_keys import UnknownApiKey, revoke_api_key

    with _database() as session:
        try:
            row = revoke_api_key(session, key_id)
        except UnknownApiKey as exc:
            raise _fail(exc.message) from None
        typer.echo(f"revoked key {row.id} ({row.name})")


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="api-keys")
