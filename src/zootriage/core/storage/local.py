"""The embedded default: objects are files under one folder (``<root>/<key>``).

A put copies into a temporary file next to the destination and renames it over the key (POSIX rename
is atomic within a file system), so a reader sees the old object, the new one or none, never half.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zootriage.core.storage.base import CHUNK, NotFound, Store, addressed_sha256, check_key, verify


def _copy_atomically(source: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src:
            shutil.copyfileobj(src, out, CHUNK)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class LocalStore(Store):
    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        """Where ``key`` lives on disk (local readers may open it in place)."""
        return self.root / check_key(key)

    def put_file(self, key: str, path: Path, *, consume: bool = False) -> None:
        verify(key, path)
        dest = self.path(key)
        if dest.exists() and (addressed_sha256(key) is not None or dest.samefile(path)):
            return  # content-addressed: the same name holds the same bytes
        if consume and path.stat().st_dev == self.root.stat().st_dev:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, dest)  # the same file system: a rename is atomic and copies nothing
            return
        _copy_atomically(path, dest)

    def get_file(self, key: str, dest: Path) -> Path:
        source = self.path(key)
        if not source.is_file():
            raise NotFound(f"no stored object {key}")
        verify(key, source)
        _copy_atomically(source, dest)
        return dest

    @contextmanager
    def open_local(self, key: str, scratch: Path | None = None) -> Iterator[Path]:
        path = self.path(key)
        if not path.is_file():
            raise NotFound(f"no stored object {key}")
        verify(key, path)
        yield path

    def exists(self, key: str) -> bool:
        return self.path(key).is_file()

    def delete(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)

    def keys(self, namespace: str) -> list[str]:
        folder = self.root / check_key(f"{namespace}/x").rsplit("/", 1)[0]
        if not folder.is_dir():
            return []
        return [
            f"{namespace}/{p.relative_to(folder).as_posix()}"
            for p in folder.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        ]
