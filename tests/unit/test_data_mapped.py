"""MNIST decoded once into read-only .npy files that children map (``core.data.mapped``): the same
pixels and labels as decoding, files that do not fit ignored, a folder that cannot be written leaving
every process to decode as before, and a sandboxed child that maps them but cannot change them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from zootriage.core import extraction
from zootriage.core.data import builtin, mapped
from zootriage.core.isolation import ChildLimits, run_isolated


@pytest.fixture
def decoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of this test's own, named as an operator would."""
    monkeypatch.delenv(mapped.CHILD_ENV, raising=False)
    monkeypatch.setenv(mapped.FOLDER_ENV, str(tmp_path / "decoded"))
    return tmp_path / "decoded"


def _splits() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``builtin._mnist_splits`` without its once-per-process cache."""
    return builtin._mnist_splits.__wrapped__()  # type: ignore[attr-defined]


def test_the_mapped_splits_are_the_decoded_ones(decoded: Path) -> None:
    assert builtin.prepare_mapped() == decoded
    files = sorted(decoded.iterdir())
    assert len(files) == 6 and all(f.stat().st_mode & 0o777 == 0o644 for f in files)  # the sandbox user reads
    assert not list(decoded.glob(".*"))  # no temporary file left
    source, _ = builtin._mnist_source()
    fresh = builtin._decode_mnist(source)
    for split, (images, labels) in _splits().items():
        assert isinstance(images, np.memmap) and not images.flags.writeable
        assert np.array_equal(images, fresh[split][0]) and np.array_equal(labels, fresh[split][1]), split
    before = {f: f.stat().st_mtime_ns for f in files}
    assert builtin.prepare_mapped() == decoded
    assert {f: f.stat().st_mtime_ns for f in files} == before  # found, not written again


def test_a_file_that_does_not_fit_is_ignored_and_written_again(decoded: Path) -> None:
    builtin.prepare_mapped()
    _, key = builtin._mnist_source()
    damaged = decoded / f"{key}-test-images.npy"
    np.save(damaged, np.zeros((10_000, 28, 27), dtype=np.uint8))  # one column short
    images, _ = _splits()["test"]
    assert not isinstance(images, np.memmap)  # decoded in this process instead
    damaged.write_bytes(damaged.read_bytes()[:1000])  # cut short
    assert not isinstance(_splits()["test"][0], np.memmap)
    assert builtin.prepare_mapped() == decoded
    assert isinstance(_splits()["test"][0], np.memmap)


def test_a_folder_that_cannot_be_written_means_decoding_in_every_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.delenv(mapped.CHILD_ENV, raising=False)
    monkeypatch.setenv(mapped.FOLDER_ENV, str(blocker / "decoded"))
    assert builtin.prepare_mapped() is None
    assert not isinstance(_splits()["test"][0], np.memmap)
    handed: dict[str, Any] = {}
    monkeypatch.setattr(extraction, "Child", lambda module, **kwargs: handed.update(kwargs))
    extraction.new_child(roots=("/data",))
    assert handed["readable"] == ("/data",) and handed["options"] is None


def test_a_failed_write_leaves_no_temporary_file(decoded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "save", full)
    assert mapped.write(decoded, "k", {"part": np.zeros(3)}) is False
    assert list(decoded.iterdir()) == []


def test_every_child_is_handed_the_folder_read_only(decoded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handed: dict[str, Any] = {}
    monkeypatch.setattr(extraction, "Child", lambda module, **kwargs: handed.update(kwargs))
    extraction.new_child(roots=("/data",), job_waiting=True)
    assert handed["readable"] == ("/data", str(decoded))
    assert handed["options"] == {"ZOOTRIAGE_CHILD_JOB_WAITING": "1", mapped.CHILD_ENV: str(decoded)}


def test_a_sandboxed_child_maps_the_files_and_cannot_change_them(decoded: Path) -> None:
    builtin.prepare_mapped()
    files = {f: f.read_bytes() for f in decoded.iterdir()}
    limits = ChildLimits(memory_bytes=1 << 30, cpu_s=60, file_bytes=1 << 20, open_files=64)
    seen = run_isolated(
        "tests.isolation_probe", {"mode": "mapped", "folder": str(decoded)}, lambda result, _: result,
        limits=limits, readable=[decoded],
    )
    expected = int(builtin._decode_mnist(builtin._mnist_source()[0])["test"][0][:100].sum())
    assert (seen["kind"], seen["checksum"]) == ("memmap", expected)
    for attempt in ("create", "rewrite", "rename", "remove"):  # the bind is read-only, the files not its own
        refused = seen[attempt].endswith(("Read-only file system", "Permission denied"))
        assert refused, (attempt, seen[attempt])
    assert {f: f.read_bytes() for f in decoded.iterdir()} == files


def test_files_are_named_by_the_packages_version_and_size_so_a_reinstall_finds_them(tmp_path: Path) -> None:
    source = tmp_path / "mnist.pkl.gz"
    source.write_bytes(b"x" * 10)
    named = mapped.stem("mnist", "0.1.4", source)
    os.utime(source, (0, 0))  # reinstalled: a new modification time, the same file
    assert mapped.stem("mnist", "0.1.4", source) == named
    assert mapped.stem("mnist", "0.1.5", source) != named
    source.write_bytes(b"x" * 11)
    assert mapped.stem("mnist", "0.1.4", source) != named
