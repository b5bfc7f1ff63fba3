"""The ``zootriage`` command line: one Typer app; each module of this package registers its commands."""

from __future__ import annotations

import typer

from zootriage.app.cli import (
    api_keys,
    backtest,
    browse,
    client,
    download,
    export,
    manage,
    projects,
    score,
    service,
    study2,
    study3,
    sweep,
    trends,
)
from zootriage.app.cli.exits import BAD_INPUT
from zootriage.app.cli.extras import extra_for

app = typer.Typer(
    name="zootriage", help="Model-zoo triage by representational geometry.", no_args_is_help=True
)


@app.callback()
def _root() -> None:
    """Model-zoo triage: rank pretrained weights by the geometry of their class manifolds."""


api_keys.register(app)
backtest.register(app)
client.register(app)
browse.register(app)
download.register(app)
export.register(app)
manage.register(app)
projects.register(app)
score.register(app)
service.register(app)
study2.register(app)
study3.register(app)
sweep.register(app)
trends.register(app)


def main() -> None:
    """The console script. A command whose packages this install lacks (the base install is the client
    alone) exits 2 naming the extra to install, not with a traceback."""
    try:
        app()
    except ModuleNotFoundError as exc:
        extra = extra_for(exc.name)
        if extra is None:
            raise
        typer.echo(
            f"error: this command needs {exc.name}, which this install of zootriage lacks: "
            f"pip install 'zootriage[{extra}]'",
            err=True,
        )
        raise SystemExit(BAD_INPUT) from None
