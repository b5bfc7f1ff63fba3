"""The ``zootriage`` command line: one Typer app; each module of this package registers its commands.

Every command runs inside one guard (``_GuardedRoot``): whatever a command did not expect (a service
answer of an unexpected shape, settings that do not validate, output that cannot be written) ends it
with one line on stderr and ``BAD_INPUT``, never a traceback, and never status 1, which means only a
gate that failed or a drift (``app.cli.exits``). Typer's own exits pass through: usage errors, the
command's ``typer.Exit``, Ctrl-C (130).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import typer
from pydantic import ValidationError
from typer.core import TyperGroup
from typer.exceptions import TyperException

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
from zootriage.app.cli.terminal_text import terminal_safe


def _output_written() -> bool:
    """Whether what the command printed reached stdout. When it cannot (a closed stdout, a reader that
    went away, a full disk), stdout is pointed at the null device, so that the interpreter's own last
    flush raises nothing either."""
    if sys.stdout is None:  # the command was started with stdout closed
        return False
    try:
        sys.stdout.flush()
        return True
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError):  # no file descriptor (a test's captured stdout)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return False


def _one_line(exc: BaseException) -> str:
    return terminal_safe(" ".join(str(exc).split()))


def _unexpected(exc: Exception) -> str:
    """The line for an exception no command handled itself."""
    if isinstance(exc, ModuleNotFoundError) and (extra := extra_for(exc.name)) is not None:
        # the base install is the client alone: a command whose packages it lacks names the extra
        return (
            f"error: this command needs {exc.name}, which this install of zootriage lacks: "
            f"pip install 'zootriage[{extra}]'"
        )
    if isinstance(exc, ValidationError) and exc.title == "Settings":
        fields = "; ".join(
            f"ZOOTRIAGE_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()[:3]
        )
        return f"error settings: {terminal_safe(fields)}"
    if type(exc).__module__.startswith("sqlalchemy."):  # ZOOTRIAGE_DATABASE_URL: bad, or no database there
        return f"error database: {_one_line(exc)}"
    if sys.stdout is None:  # started with stdout closed: the command failed to write to it
        return "error cannot write the output: standard output is closed"
    if isinstance(exc, OSError):  # a full disk, a closed pipe, under stdout or a file the command wrote
        written = _output_written()
        return f"error {'' if written else 'cannot write the output: '}{_one_line(exc)}"
    return f"error internal: {type(exc).__name__}: {_one_line(exc)}"


class _GuardedRoot(TyperGroup):
    """The root command: runs the chosen command, flushes its output, and turns any exception it did not
    expect into one line on stderr and ``BAD_INPUT`` (the module docstring)."""

    def invoke(self, ctx: Any) -> Any:
        try:
            try:
                return super().invoke(ctx)
            finally:
                if sys.stdout is not None:
                    sys.stdout.flush()  # here, so that a failed write is this guard's to report
        except (typer.Exit, typer.Abort, TyperException):  # Typer's own: exits, usage errors
            raise
        except BrokenPipeError:  # the reader went away (``| head``): nothing more to say to it
            _output_written()
            raise typer.Exit(BAD_INPUT) from None
        except Exception as exc:
            typer.echo(_unexpected(exc), err=True)
            raise typer.Exit(BAD_INPUT) from None


app = typer.Typer(
    name="zootriage",
    help="Model-zoo triage by representational geometry.",
    no_args_is_help=True,
    cls=_GuardedRoot,
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
    """The console script."""
    app()
