"""Reading the published JSON files (``core.catalogue``): each once per process."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NAMES = ("markers", "torchvision", "timm")


def path_of(name: str) -> Path:
    """The file of one published catalogue (``markers``, ``torchvision``, ``timm``)."""
    if name not in NAMES:
        raise ValueError(f"no catalogue {name!r}; catalogues: {NAMES}")
    return HERE / f"{name}.json"


@cache
def load(name: str) -> Any:
    """The parsed content of one catalogue file, read on first use."""
    return json.loads(path_of(name).read_text(encoding="utf-8"))


def dumps(content: Any) -> str:
    """The one text form of a catalogue: in the libraries' own order (timm's natural sort, the
    registry's groups), one entry a line, so that a regenerated file diffs by entry."""
    return json.dumps(content, indent=1, ensure_ascii=False) + "\n"
