"""Writing a self-describing ``.pt2``: a user's model as a ``torch.export`` program with a dynamic
batch and its ``zootriage.json`` (``core.zoo.program_metadata``), so that it uploads and scores with
the preprocessing and label space it was trained with rather than the bare [0, 1] fallback.

The model is traced on the CPU on purpose: the program stores its weights on the device it was
exported on, and a CPU program loads on every worker, which then moves it to its own device.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import BinaryIO

import torch
from torch import nn

from zootriage.core.errors import BadCheckpoint
from zootriage.core.zoo.program_metadata import METADATA_FILE, ProgramMetadata

MAX_BATCH = 4096


def export_program(
    model: nn.Module, input_shape: tuple[int, int, int], metadata: ProgramMetadata, out: Path
) -> Path:
    """Export ``model`` (in eval mode) for inputs ``(N, *input_shape)``, N from 1 to ``MAX_BATCH``.

    The preprocessing must produce exactly that input (channels, crop): a program fed something else
    would fail in every job, so it is refused here, where the user can fix it.
    """
    if metadata.preprocess is not None:
        fed = (metadata.preprocess.channels, *metadata.preprocess.crop)
        if fed != tuple(input_shape):
            raise BadCheckpoint(f"the preprocessing gives (C, H, W) = {fed}; the input shape: {input_shape}")
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    example = torch.zeros((2, *input_shape))
    try:
        program = torch.export.export(model.cpu().eval(), (example,), dynamic_shapes=({0: batch},))
    except Exception as exc:  # torch's export errors are many kinds; the user needs the first line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadCheckpoint(f"torch.export could not export {type(model).__name__}: {first}") from exc
    # Every field written, nulls included: a missing ``resize`` would read back as the default 256.
    extra = {METADATA_FILE: metadata.model_dump_json()}
    _save_whole(program, extra, out)
    return out


class _Writes(io.RawIOBase):
    """A file as torch's archive writer sees it: every write answers success, and the first ``OSError``
    (a full disk, a file size limit) is kept in ``failed`` and ends the writing. The writer is C++: an
    error raised into it, now or when it finishes the archive on being freed, aborts the process."""

    def __init__(self, handle: BinaryIO) -> None:
        super().__init__()
        self.handle = handle
        self.failed: OSError | None = None

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self.handle.seek(offset, whence)

    def tell(self) -> int:
        return self.handle.tell()

    def write(self, data: bytes) -> int:  # type: ignore[override]  # torch passes a memoryview
        if self.failed is None:
            try:
                self.handle.write(data)
            except OSError as exc:
                self.failed = exc
        return memoryview(data).nbytes

    def flush(self) -> None:
        if self.failed is None:
            try:
                self.handle.flush()
            except OSError as exc:
                self.failed = exc


def _mode_for(out: Path) -> int:
    """The permissions ``out`` keeps (those of the file it replaces), or a new file's (0666 less the
    umask), rather than the private 0600 of the temporary file it was written as."""
    try:
        return out.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _save_whole(program: torch.export.ExportedProgram, extra: dict[str, str], out: Path) -> None:
    """Save ``program`` to ``out`` whole or not at all: into a temporary file in its folder, flushed to
    disk, then renamed over it, so that a failure mid-way leaves ``out`` as it was. A failure to write
    raises ``OSError`` naming ``out``."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
    except OSError as exc:
        raise OSError(f"cannot write {out}: {exc}") from exc
    partial = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            writes = _Writes(handle)
            try:
                torch.export.save(program, writes, extra_files=extra)  # type: ignore[arg-type]
            except RuntimeError as exc:
                raise OSError(f"cannot write {out}: {str(exc).strip().splitlines()[0]}") from exc
            writes.flush()
            if writes.failed is not None:
                raise OSError(f"cannot write {out}: {writes.failed.strerror or writes.failed}")
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), _mode_for(out))
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
