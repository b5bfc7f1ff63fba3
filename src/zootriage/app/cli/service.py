"""Commands that run the service: ``serve``, ``worker``, ``up`` (embedded), ``migrate``.

``register(app)`` adds them to the ``zootriage`` Typer app; every URL comes from ``ZOOTRIAGE_*``. The
bind address is a setting (``ZOOTRIAGE_HOST``/``ZOOTRIAGE_PORT``) because the access policy depends on
it; ``--host``/``--port`` override it for this run, for the app factory too.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from zootriage.app.cli.exits import BAD_INPUT

if TYPE_CHECKING:
    from zootriage.app.settings import Settings

HostOption = Annotated[
    str | None, typer.Option(help="interface to bind [default: ZOOTRIAGE_HOST or 127.0.0.1]")
]
PortOption = Annotated[int | None, typer.Option(help="TCP port [default: ZOOTRIAGE_PORT or 8000]")]


def _bound_settings(host: str | None, port: int | None) -> Settings:
    """The settings with the command line's address, exported so that uvicorn's workers agree; a
    server that would be open to the network stops here with the policy's message (exit code 2)."""
    from sqlalchemy.exc import SQLAlchemyError

    from zootriage.app.access import UnsafeBind, check_bind
    from zootriage.app.settings import get_settings

    for name, value in (("ZOOTRIAGE_HOST", host), ("ZOOTRIAGE_PORT", port)):
        if value is not None:
            os.environ[name] = str(value)
    get_settings.cache_clear()
    settings = get_settings()
    try:
        check_bind(settings)
    except UnsafeBind as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(BAD_INPUT) from None
    except SQLAlchemyError as exc:
        typer.echo(f"error: cannot look for API keys in the database: {str(exc).splitlines()[0]}", err=True)
        raise typer.Exit(BAD_INPUT) from None
    return settings


def migrate() -> None:
    """Create or upgrade the database schema (alembic upgrade head)."""
    from zootriage.app.migrate import upgrade_to_head
    from zootriage.app.settings import get_settings

    upgrade_to_head(get_settings().effective_database_url)
    typer.echo("database is at the latest schema")


def serve(
    host: HostOption = None,
    port: PortOption = None,
    workers: Annotated[int, typer.Option(help="API processes")] = 1,
    run_migrations: Annotated[
        bool, typer.Option("--migrate/--no-migrate", help="upgrade the schema first")
    ] = True,
) -> None:
    """Run the HTTP API (uvicorn) against ZOOTRIAGE_DATABASE_URL and ZOOTRIAGE_BROKER_URL."""
    import uvicorn

    if run_migrations:
        migrate()
    settings = _bound_settings(host, port)
    typer.echo(f"zootriage API on http://{settings.host}:{settings.port} (docs at /docs)")
    # No ``limit_concurrency``: uvicorn's own 503 has no Retry-After; the app admits requests itself
    # (app.api.capacity) and the default backlog (2048) holds a burst of connections meanwhile.
    uvicorn.run(
        "zootriage.app.main:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=workers,
        log_level="info",
    )


def worker(
    concurrency: Annotated[int | None, typer.Option(help="processes (default: one per GPU, else 1)")] = None,
    loglevel: Annotated[str, typer.Option(help="Celery log level")] = "INFO",
    queues: Annotated[
        str | None,
        typer.Option(
            help="stage queues to consume, comma-separated: gpu (extraction), cpu (markers); "
            "default ZOOTRIAGE_WORKER_QUEUES, i.e. both"
        ),
    ] = None,
) -> None:
    """Run a scoring worker (Celery) consuming ZOOTRIAGE_BROKER_URL."""
    from zootriage.app.settings import Settings, get_settings
    from zootriage.worker.celery_app import celery_app

    try:
        if queues is None:
            chosen = get_settings().worker_queues
        else:
            chosen = Settings(worker_queues=[q.strip() for q in queues.split(",") if q.strip()]).worker_queues
    except ValueError:
        raise typer.BadParameter("one or more of gpu, cpu", param_hint="--queues") from None
    argv = ["worker", f"--loglevel={loglevel}", f"--queues={','.join(chosen)}"]
    if concurrency is not None:
        argv.append(f"--concurrency={concurrency}")
    celery_app.worker_main(argv)


def up(host: HostOption = None, port: PortOption = None) -> None:
    """API and a worker together on the embedded default (SQLite, filesystem broker): no servers needed."""
    from zootriage.app.embedded import run_embedded

    migrate()  # before the policy looks for keys in a database that may be new
    run_embedded(_bound_settings(host, port))


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(worker)
    app.command()(up)
    app.command()(migrate)
