"""Keeping every dataset path inside the configured data roots.

A reference carries a path *relative* to a root; it is refused if it is absolute, climbs with ``..``,
or resolves (through any symlink, at any depth) outside the root it was found under. The service
passes its roots in; nothing here reads settings.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from zootriage.core.errors import PathOutsideRoots, UnknownDataset


def resolve_under_roots(relative: str, roots: Sequence[Path | str]) -> tuple[Path, Path]:
    """``(real path, its root)`` of the first root holding ``relative``."""
    pure = PurePosixPath(relative)
    if not pure.parts:
        raise PathOutsideRoots(f"{relative!r}: name a folder or file inside a data root, not the root itself")
    if pure.is_absolute() or relative.startswith(("~", "\\")) or ":" in pure.parts[0]:
        raise PathOutsideRoots(f"{relative!r}: dataset paths are relative to a data root")
    if ".." in pure.parts:
        raise PathOutsideRoots(f"{relative!r}: '..' is not allowed in dataset paths")
    if not roots:
        raise UnknownDataset("no data roots are configured, so folder and archive datasets are disabled")
    for root in roots:
        base = Path(root).resolve()
        candidate = base.joinpath(*pure.parts)
        if os.path.lexists(candidate):
            return ensure_inside(candidate, base, relative), base
    raise UnknownDataset(f"{relative!r} is not under any data root")


def ensure_inside(path: Path, root: Path, shown: str) -> Path:
    """The real path of ``path``, refusing it if a symlink leads out of ``root``."""
    real = path.resolve()
    if not real.is_relative_to(root):
        raise PathOutsideRoots(f"{shown!r} leads outside its data root (through a symlink)")
    return real
