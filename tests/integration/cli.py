"""Running ``zootriage`` client commands in this process against a test stack (Typer's runner: the same
code as the console script, without a torch import per call)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from click.testing import Result
from rich.console import Console
from typer.testing import CliRunner

from tests.integration.stack import TriageStack
from zootriage.app.cli import app as cli

SCORING = [
    "--dataset",
    "builtin:mnist",
    "--split",
    "test",
    "--per-class",
    "50",
    "--n-t",
    "50",
    "--points-per-class",
    "10",
]


@contextmanager
def console_width(columns: int) -> Iterator[None]:
    """The command line's rich consoles print ``columns`` wide for the block (they fix their width
    from COLUMNS when made, at import)."""
    consoles = [
        value
        for name, module in list(sys.modules.items())
        if name == "zootriage.app.cli" or name.startswith("zootriage.app.cli.")
        for value in vars(module).values()
        if isinstance(value, Console)
    ]
    before = [console._width for console in consoles]
    for console in consoles:
        console._width = columns
    try:
        yield
    finally:
        for console, width in zip(consoles, before, strict=True):
            console._width = width


def zootriage(stack: TriageStack, *args: str, url: str | None = None, columns: int = 200) -> Result:
    """``zootriage ARGS`` against the stack; an exception other than the exit is a test failure."""
    env = {"ZOOTRIAGE_URL": url or stack.stack.base_url, "ZOOTRIAGE_API_KEY": None, "COLUMNS": str(columns)}
    with console_width(columns):
        result = CliRunner().invoke(cli, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError("".join(traceback.format_exception(*result.exc_info)))
    return result


def no_traceback(result: Result) -> None:
    assert "Traceback" not in result.stderr + result.stdout
