"""The child's folder is the child's: code running in it can plant links and FIFOs there before its
parent (root, on a worker) stages a checkpoint, reads the extraction back or logs the end of its
stderr. Each attack runs for real in a sandboxed child (tests/isolation_probe.py, mode ``plant``) and
is shown to reach nothing outside the folder, to block nothing, and to fail only its own job."""

from __future__ import annotations

import copy
import logging
import stat
from pathlib import Path

import pytest

from zootriage.core.errors import CheckpointUnsafe, ResourceLimit
from zootriage.core.extraction import extract_in, output_limit
from zootriage.core.isolation import Child, ChildLimits
from zootriage.core.zoo.refs import parse_model_ref

PROBE = "tests.isolation_probe"
OUTPUT = "extraction.safetensors"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the host that only its owner may read: what a planted link points at."""
    path = tmp_path / "victim"
    path.write_text("the host's own bytes")
    path.chmod(0o600)
    return path


def _planted(request: dict[str, object]) -> Child:
    child = Child(PROBE, limits=ChildLimits(memory_bytes=1 << 30, cpu_s=60))
    child.send({"mode": "plant", **request})
    if not request.get("garbage"):
        assert child.receive("result") == {"planted": True}
    return child


def test_a_link_planted_at_the_staged_name_is_not_written_through(victim: Path, tmp_path: Path) -> None:
    before = victim.stat()
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"checkpoint bytes")
    with (
        _planted({"links": {"model.pt": str(victim)}}) as child,
        pytest.raises(RuntimeError, match=r"already holds a 'model\.pt'"),
    ):
        child.stage({"model.pt": checkpoint})
    after = victim.stat()
    assert victim.read_text() == "the host's own bytes"
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (
        before.st_uid, before.st_gid, 0o600)


def test_a_staged_file_is_the_childs_to_read_and_nothing_else(tmp_path: Path) -> None:
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"checkpoint bytes")
    with _planted({}) as child:
        child.stage({"model.pt": checkpoint})
        staged = (child.folder / "model.pt").stat()
        assert (child.folder / "model.pt").read_bytes() == b"checkpoint bytes"
        assert (staged.st_uid, staged.st_gid) == (child.folder.stat().st_uid, child.folder.stat().st_gid)
        with pytest.raises(ValueError, match="plain file name"):
            child.stage({"../model.pt": checkpoint})


@pytest.mark.parametrize("planted", ["fifo", "link"])
def test_an_output_that_is_not_a_regular_file_is_refused_without_blocking(
    planted: str, victim: Path
) -> None:
    request = {"fifos": [OUTPUT]} if planted == "fifo" else {"links": {OUTPUT: str(victim)}}
    with (
        _planted(request) as child,
        pytest.raises(RuntimeError, match=r"not a regular file|left no readable"),
    ):
        child.read_output(OUTPUT, output_limit(10))


def test_an_output_over_its_bound_is_refused_unread() -> None:
    with _planted({"big": (2 << 20) + 1}) as child:
        with pytest.raises(ResourceLimit, match="more than 2097152 bytes"):
            child.read_output(OUTPUT, 2 << 20)
        assert len(child.read_output(OUTPUT, 4 << 20)) == (2 << 20) + 1


def test_the_end_of_its_stderr_is_read_through_the_parents_own_descriptor(
    victim: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The child renames its stderr.log away and leaves a link to a root-only file at its name, then
    writes a line that is not JSON: the parent logs the child's real last words, not the host file."""
    caplog.set_level(logging.WARNING, logger="zootriage.core.isolation")
    with (
        _planted({"stderr_to": str(victim), "garbage": True}) as child,
        pytest.raises(RuntimeError, match="not JSON"),
    ):
        child.receive("result")
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "the last words of the child" in logged
    assert "the host's own bytes" not in logged


GOOD_DESCRIPTION = {
    "timings": {"load_model": 0.1, "extract": 0.2},
    "threads": 2,
    "info": {
        "source": "checkpoint", "architecture": "Net", "weights": "m.pt2", "acc1": None, "num_params": 10,
        "num_classes": 10, "label_space": "digits", "penultimate": "fc", "warnings": [],
    },
    "weights_sha256": "ab" * 32,
    "preprocess": {"channels": 1, "crop": [28, 28], "resize": None, "mean": [0.5], "std": [0.5]},
}


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("timings", "extract"), float("nan")),  # NaN: the database's JSON refuses it
        (("info", "architecture"), "Net\u0000"),  # NUL: PostgreSQL text refuses it
        (("info", "architecture"), {"a": 1}),  # not text at all
        (("info", "architecture"), "N" * 129),  # over the runs' column
        (("info", "name"), "extra"),  # a field no loader reports
        (("threads",), 0),
        (("weights_sha256",), "not a hash"),
    ],
)
def test_a_childs_description_of_its_model_is_checked_before_use(
    where: tuple[str, ...], value: object
) -> None:
    """After loading an upload, the child says what that upload made it say: a description a real
    loader never writes fails the job as the checkpoint's fault (it once left the job 'running' until
    the reaper, each attempt failing the database write that ends it)."""
    described = copy.deepcopy(GOOD_DESCRIPTION)
    target: dict[str, object] = described
    for key in where[:-1]:
        target = target[key]  # type: ignore[assignment]
    target[where[-1]] = value
    model = parse_model_ref("tv:resnet18.IMAGENET1K_V1")  # the probe loads nothing: any reference
    limits = ChildLimits(memory_bytes=1 << 30, cpu_s=60)
    with (
        Child(PROBE, limits=limits) as child,
        pytest.raises(CheckpointUnsafe, match="described the model it loaded wrongly"),
    ):
        extract_in(child, model, {"mode": "describe", "described": described}, 10, lambda *_: None)
    with (
        Child(PROBE, limits=limits) as child,
        pytest.raises(RuntimeError, match="left no readable"),  # the same, well described: read on
    ):
        extract_in(child, model, {"mode": "describe", "described": GOOD_DESCRIPTION}, 10, lambda *_: None)
