"""Running a script of the repository (a benchmark) or the console script in the test's own process, as
``python SCRIPT ARGS`` or ``zootriage ARGS`` would: its ``__main__`` block (or ``main()``) with
``sys.argv`` set, its exit status and what it wrote to stderr. A subprocess would import torch again
for each case (4 s each), and a command whose work runs in its own sandboxed children (``score``) needs
no second interpreter around them either."""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def run_script(path: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The exit status (0 when it returned) and stderr of ``path`` run with ``args``; any exception
    other than ``SystemExit`` propagates, so a traceback fails the test. The script's folder is first
    on ``sys.path`` while it runs, as ``python SCRIPT`` puts it (a benchmark imports its neighbours)."""
    with _folder_on_path(path):
        return run_main(lambda: runpy.run_path(str(path), run_name="__main__"), [str(path), *args], capsys)


def load_script(path: Path) -> dict[str, Any]:
    """The names ``path`` defines, loaded as a module (its ``__main__`` block not run), its folder on
    ``sys.path`` meanwhile as for :func:`run_script`."""
    with _folder_on_path(path):
        return runpy.run_path(str(path))


@contextmanager
def _folder_on_path(path: Path) -> Iterator[None]:
    sys.path.insert(0, str(path.parent))
    try:
        yield
    finally:
        sys.path.remove(str(path.parent))


def run_main(
    main: Callable[[], object], argv: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """The exit status (0 when it returned) and stderr of ``main()`` called with ``sys.argv`` set to
    ``argv`` (the program's name first), as a console script is; any exception other than
    ``SystemExit`` propagates, so a traceback fails the test."""
    saved = sys.argv
    sys.argv = argv
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = saved
    return code, capsys.readouterr().err
