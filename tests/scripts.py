"""Running a script of the repository (a benchmark) in the test's own process, as ``python SCRIPT ARGS``
would: its ``__main__`` block with ``sys.argv`` set, its exit status and what it wrote to stderr. A
subprocess would import torch again for each case (4 s each); argument checks need none of that."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest


def run_script(path: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The exit status (0 when it returned) and stderr of ``path`` run with ``args``; any exception
    other than ``SystemExit`` propagates, so a traceback fails the test."""
    saved = sys.argv
    sys.argv = [str(path), *args]
    try:
        runpy.run_path(str(path), run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = saved
    return code, capsys.readouterr().err
