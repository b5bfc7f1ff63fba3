"""Commands that run the service: ``serve``, ``worker``, ``up`` (embedded), ``migrate``, ``create-api-key``.

``register(app)`` adds them to the ``zootriage`` Typer app; every URL comes from ``ZOOTRIAGE_*``.
"""

from __future__ import annotations

from typing import Annotated

import typer


def migrate() -> None:
    """Create or upgrade the database schema (alembic upgrade head)."""
    from app.migrate import upgrade_to_head
    from app.settings import get_settings

    upgrade_to_head(get_settings().effective_database_url)
    typer.echo("database is at the latest schema")


def serve(
    host: Annotated[str, typer.Option(help="interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8000,
    workers: Annotated[int, typer.Option(help="API processes")] = 1,
    run_migrations: Annotated[
        bool, typer.Option("--migrate/--no-migrate", help="upgrade the schema first")
    ] = True,
) -> None:
    """Run the HTTP API (uvicorn) against ZOOTRIAGE_DATABASE_URL and ZOOTRIAGE_BROKER_URL."""
    import uvicorn

    if run_migrations:
        migrate()
    typer.echo(f"zootriage API on http://{host}:{port} (docs at /docs)")
    uvicorn.run("app.main:create_app", factory=True, host=host, port=port, workers=workers, log_level="info")


def worker(
    concurrency: Annotated[int | None, typer.Option(help="processes (default: one per GPU, else 1)")] = None,
    loglevel: Annotated[str, typer.Option(help="Celery log level")] = "INFO",
) -> None:
    """Run a scoring worker (Celery) consuming ZOOTRIAGE_BROKER_URL."""
    from worker.celery_app import celery_app

    argv = ["worker", f"--loglevel={loglevel}"]
    if concurrency is not None:
        argv.append(f"--concurrency={concurrency}")
    celery_app.worker_main(argv)


def up(
    host: Annotated[str, typer.Option(help="interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8000,
) -> None:
    """API and a worker together on the embedded default (SQLite, filesystem broker): no servers needed."""
    from app.embedded import run_embedded

    run_embedded(host, port)


def create_api_key(
    name: Annotated[str, typer.Argument(help="who or what the key is for")],
    store: Annotated[
        bool,
        typer.Option(
            "--store/--no-store",
            help="store its hash in the database, or print it for ZOOTRIAGE_API_KEY_HASHES",
        ),
    ] = True,
) -> None:
    """Create an API key for the write endpoints; it is printed once, only its hash is kept."""
    from app.api_keys import create_api_key as create
    from app.api_keys import hash_key, new_key

    if not store:
        key = new_key()
        typer.echo(f"{key}\nZOOTRIAGE_API_KEY_HASHES={hash_key(key)}")
        return
    from app.db.session import session_scope
    from app.settings import get_settings

    with session_scope(get_settings().effective_database_url) as session:
        key = create(session, name)
    typer.echo(key)


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(worker)
    app.command()(up)
    app.command()(migrate)
    app.command("create-api-key")(create_api_key)
