"""docs/ci.md's commands as a test reads them."""

from __future__ import annotations

import shlex
from pathlib import Path

CI_DOC = Path(__file__).resolve().parents[1] / "docs" / "ci.md"


def documented_command(text: str, start: str) -> list[str]:
    """The first command of the page that begins with ``start``, its ``\\`` continuations joined."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith(start))
    parts = []
    for line in lines[first:]:
        parts.append(line.strip().removesuffix("\\"))
        if not line.rstrip().endswith("\\"):
            break
    return shlex.split(" ".join(parts))
