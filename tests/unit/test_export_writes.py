"""``zootriage export --out FILE`` writes the program whole or not at all: a write that fails mid-way
(here a real file size limit, as a full disk would) exits 2 with one line and leaves FILE as it was;
a folder or an undecodable name as FILE is refused or written without a traceback."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from zootriage.app.cli import app

SRC = str(Path(__file__).resolve().parents[2] / "src")
FACTORY = """
from torch import nn


def net():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
"""


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's factory and its weights, in the folder the command runs from."""
    (tmp_path / "tiny_nets.py").write_text(FACTORY)
    torch.save(nn.Sequential(nn.Flatten(), nn.Linear(784, 10)).state_dict(), tmp_path / "w.pt")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _limit_file_size(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_write_that_fails_mid_way_leaves_the_old_file(user: Path) -> None:
    target = user / "net.pt2"
    target.write_bytes(b"the good program" * 4096)  # 64 KiB, over the limit below: written before it
    before = target.read_bytes()
    result = subprocess.run(
        [sys.executable, "-c", "from zootriage.app.cli import main; main()",
         "export", "tiny_nets:net", "--weights", "w.pt", "--preset", "mnist", "--out", str(target)],
        cwd=user, env={**os.environ, "PYTHONPATH": SRC}, preexec_fn=lambda: _limit_file_size(20_000),
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert "cannot write" in result.stderr and "Traceback" not in result.stderr
    assert target.read_bytes() == before
    assert not [p for p in user.iterdir() if p.name.endswith(".partial")]


def export(*args: str) -> tuple[int, str]:
    given = ["export", "tiny_nets:net", "--weights", "w.pt", "--preset", "mnist", *args]
    result = CliRunner().invoke(app, given)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_a_folder_as_out_is_refused(user: Path) -> None:
    (user / "dir.pt2").mkdir()
    code, output = export("--out", "dir.pt2")
    assert code == 2 and "is a folder" in output, output


def test_a_file_under_a_file_is_refused(user: Path) -> None:
    (user / "plain").write_text("x")
    code, output = export("--out", "plain/net.pt2")
    assert code == 2 and "cannot write plain/net.pt2" in output, output


def test_an_undecodable_name_is_written_and_shown_escaped(user: Path) -> None:
    name = os.fsdecode(b"\xffnet.pt2")  # a byte that is no UTF-8: a lone surrogate in Python's str
    code, output = export("--out", name)
    assert code == 0, output
    assert (user / name).is_file()
    assert "wrote \\udcffnet.pt2" in output


def test_the_program_gets_the_permissions_of_a_plain_write(tmp_path: Path) -> None:
    """Written through a private temporary file, the program still ends with a new file's mode (0666
    less the umask), or with the mode of the file it replaced."""
    from torch import nn

    from zootriage.core.zoo.exporting import export_program
    from zootriage.core.zoo.program_metadata import ProgramMetadata

    model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    fresh = export_program(model, (1, 2, 2), ProgramMetadata(), tmp_path / "new.pt2")
    mask = os.umask(0)
    os.umask(mask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~mask
    kept = tmp_path / "kept.pt2"
    kept.write_bytes(b"old")
    kept.chmod(0o640)
    export_program(model, (1, 2, 2), ProgramMetadata(), kept)
    assert kept.stat().st_mode & 0o777 == 0o640 and kept.read_bytes() != b"old"
