"""The confined child: no network, rlimits in force, its folder removed, killed with its workers at
the time limit, and its errors raised in the parent with their codes."""

from __future__ import annotations

import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from zootriage.core.errors import CheckpointKeyMismatch, TimeLimit
from zootriage.core.isolation import ChildLimits, isolation, run_isolated

PROBE = "tests.isolation_probe"


def _keep(result: dict[str, Any], folder: Path) -> dict[str, Any]:
    assert (folder / "request.json").is_file()
    return {**result, "folder": str(folder)}


def test_the_child_has_no_network_and_runs_under_limits() -> None:
    assert isolation().command, "this machine allows network namespaces; the child must get one"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        reachable = socket.create_connection(listener.getsockname(), timeout=5)  # from here it is
        reachable.close()
        limits = ChildLimits(memory_bytes=6 << 30, cpu_s=120, file_bytes=1 << 30, open_files=256)
        result = run_isolated(PROBE, {"mode": "report", "port": listener.getsockname()[1]}, _keep,
                              limits=limits)
    assert result["network"].startswith("refused"), result["network"]
    assert result["limits"] == {
        "RLIMIT_AS": 6 << 30, "RLIMIT_CPU": 120, "RLIMIT_FSIZE": 1 << 30, "RLIMIT_NOFILE": 256,
        "RLIMIT_CORE": 0,
    }
    assert result["cwd"] == result["folder"] == result["tmpdir"]
    assert not Path(result["folder"]).exists()
    assert not any("DATABASE" in name or "BROKER" in name for name in result["env"])


def test_on_a_gpu_the_address_space_is_not_limited() -> None:
    result = run_isolated(PROBE, {"mode": "report", "port": 9}, _keep, gpu=True)
    assert result["limits"]["RLIMIT_AS"] == -1  # RLIM_INFINITY: CUDA maps far more than it uses


def test_a_child_past_its_time_limit_is_killed_with_its_children() -> None:
    seen: dict[str, int] = {}

    def progress(stage: str, done: int, _total: int) -> None:
        seen[stage] = done

    with pytest.raises(TimeLimit, match="ran past 8 s"):
        run_isolated(PROBE, {"mode": "hang"}, _keep, limits=ChildLimits(wall_s=8), on_progress=progress)
    assert seen["sleeper"] > 0
    assert _dead(seen["sleeper"])


class Cancelled(Exception):
    pass


def test_an_exception_in_the_parent_kills_the_child_and_removes_its_folder() -> None:
    """A cancel reaches the computation as an exception from the progress callback."""
    seen: dict[str, Any] = {}
    before = set(Path(tempfile.gettempdir()).glob("zootriage-child-*"))

    def cancel(stage: str, done: int, _total: int) -> None:
        seen[stage] = done
        seen["folders"] = set(Path(tempfile.gettempdir()).glob("zootriage-child-*")) - before
        raise Cancelled

    with pytest.raises(Cancelled):
        run_isolated(PROBE, {"mode": "hang"}, _keep, on_progress=cancel)
    assert _dead(seen["sleeper"])
    assert seen["folders"] and not any(folder.exists() for folder in seen["folders"])


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for init to reap it (SIGKILL has landed); polled for a few seconds."""
    for _ in range(50):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


def test_errors_come_back_with_their_code() -> None:
    with pytest.raises(CheckpointKeyMismatch, match=r"m\.pt does not fit"):
        run_isolated(PROBE, {"mode": "error"}, _keep)
