"""The sandboxed child, attacked from inside: every way back to the host that an upload's code would
try runs for real through the isolation helper (tests/isolation_probe.py) and is shown to fail; and the
child's limits, folder, time limit, death with its parent and error codes."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from zootriage.core import cgroups, memory_limit
from zootriage.core.errors import CheckpointKeyMismatch, ResourceLimit, TimeLimit
from zootriage.core.isolation import (
    ADDRESS_SPACE_HEADROOM,
    ChildLimits,
    isolation,
    run_isolated,
)

PROBE = "tests.isolation_probe"
POSTGRES_SOCKET = "/var/run/postgresql/.s.PGSQL.5432"
SECRET = "zootriage-test-secret-" + uuid.uuid4().hex


def _keep(result: dict[str, Any], folder: Path) -> dict[str, Any]:
    assert (folder / "stderr.log").is_file()
    return {**result, "folder": str(folder)}


@pytest.fixture(scope="module")
def attack(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of every escape, with a TCP listener, a secret in our environment and a folder that
    anyone may write, all reachable from here: only the sandbox stands between them and the child."""
    outside = tmp_path_factory.mktemp("outside")
    outside.chmod(0o777)
    target = outside / "escaped.txt"
    hub_home = tmp_path_factory.mktemp("hf-home")
    (hub_home / "token").write_text(SECRET)  # where huggingface_hub keeps a logged-in user's token
    os.environ["ZOOTRIAGE_DATABASE_URL"] = f"postgresql://u:{SECRET}@127.0.0.1/db"
    previous_hub = os.environ.get("HF_HOME")
    os.environ["HF_HOME"] = str(hub_home)
    try:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            socket.create_connection(listener.getsockname(), timeout=5).close()  # from here it is reachable
            request = {
                "mode": "report", "port": listener.getsockname()[1], "unix_socket": POSTGRES_SOCKET,
                "outside": str(target), "parent_pid": os.getpid(), "secret": SECRET,
            }
            limits = ChildLimits(memory_bytes=2 << 30, cpu_s=120, file_bytes=1 << 30, open_files=256)
            result = run_isolated(PROBE, request, _keep, limits=limits)
    finally:
        del os.environ["ZOOTRIAGE_DATABASE_URL"]
        if previous_hub is None:
            del os.environ["HF_HOME"]
        else:
            os.environ["HF_HOME"] = previous_hub
    return {**result, "target": target}


def test_this_machine_gets_the_bubblewrap_sandbox() -> None:
    mode = isolation()
    assert mode.sandboxed, mode.describe()
    assert "bubblewrap" in mode.describe()


def test_the_child_runs_as_an_unprivileged_user_without_groups(attack: dict[str, Any]) -> None:
    assert attack["uid"] != 0 and attack["euid"] != 0
    if os.geteuid() == 0:
        assert attack["uid"] == 65534 or attack["uid"] >= 100  # nobody or a dedicated system user
    assert attack["groups"] in ([], [os.getgid()]) or 0 not in attack["groups"]


def test_the_child_has_no_network(attack: dict[str, Any]) -> None:
    assert attack["network"].startswith(("ConnectionRefusedError", "OSError")), attack["network"]


def test_the_child_cannot_re_enter_a_network_namespace_nor_make_one(attack: dict[str, Any]) -> None:
    assert attack["setns"] != "ok" and attack["unshare_user"] != "ok" and attack["unshare_mount"] != "ok"
    assert attack["mount"] != "ok" and attack["ptrace"] != "ok"


@pytest.mark.skipif(not Path(POSTGRES_SOCKET).exists(), reason="no local PostgreSQL socket to aim at")
def test_the_child_cannot_reach_postgresql_over_its_unix_socket(attack: dict[str, Any]) -> None:
    with socket.socket(socket.AF_UNIX) as unix:
        unix.connect(POSTGRES_SOCKET)  # reachable from here
    assert attack["unix_socket"].startswith("FileNotFoundError"), attack["unix_socket"]


def test_the_child_reads_no_secret_and_no_host_file(attack: dict[str, Any]) -> None:
    assert not attack["secret_seen"]
    assert not any("DATABASE" in name or "BROKER" in name for name in attack["env"])
    assert attack["shadow"].startswith(("FileNotFoundError", "PermissionError")), attack["shadow"]
    # the hub's cache is in its view, HF_HOME and the token beside that cache are not
    assert attack["hf_token"].startswith("FileNotFoundError"), attack["hf_token"]


def test_the_kernels_wider_calls_are_refused(attack: dict[str, Any]) -> None:
    """io_uring, kcmp, adjusting clocks and personalities that weaken the address space: refused by
    the seccomp filter (each was allowed before it listed them); asking for the personality is not."""
    for call in ("io_uring", "kcmp", "adjtimex", "personality_exec"):
        assert attack[call] == f"errno {errno.EPERM}", (call, attack[call])
    assert attack["personality_query"] == "ok"


def test_the_child_holds_no_descriptor_of_the_host(attack: dict[str, Any]) -> None:
    """Only its pipes, its stderr and what it opened itself: not the memory cgroup's ``cgroup.procs``
    that the forked process joined through before exec, nor the seccomp program's pipe."""
    assert not any("cgroup" in target for target in attack["descriptors"]), attack["descriptors"]
    assert sum(target.startswith("pipe:") for target in attack["descriptors"]) == 2, attack["descriptors"]


def test_its_memory_file_systems_are_bounded_by_its_memory_bound(attack: dict[str, Any]) -> None:
    bound = memory_limit.bound(2 << 30)
    for path, size in attack["tmpfs"].items():
        assert bound <= size < bound + 4096, (path, size, bound)  # tmpfs rounds up to a page


def test_the_child_sees_only_its_own_processes(attack: dict[str, Any]) -> None:
    assert attack["host_commands"] == []
    assert len(attack["visible_pids"]) <= 4 and attack["pid"] <= 4  # bwrap's init, the child, ...
    assert attack["signal_parent"].startswith("ProcessLookupError"), attack["signal_parent"]


def test_the_child_writes_nothing_outside_its_folder(attack: dict[str, Any]) -> None:
    assert not attack["target"].exists()  # its /tmp is its own: the write, if any, went there
    assert attack["write_python"].startswith("OSError") or "Read-only" in attack["write_python"]
    assert not (Path(sys.prefix) / "zootriage-was-here").exists()


def test_the_child_runs_under_limits_in_a_folder_of_its_own(attack: dict[str, Any]) -> None:
    """Its processes are bounded by a pids group of its own where one can be made
    (tests/unit/test_child_cgroups.py), else by its user's RLIMIT_NPROC."""
    bound = memory_limit.bound(2 << 30)
    limits = dict(attack["limits"])
    user_processes = limits.pop("RLIMIT_NPROC")
    assert limits == {
        "RLIMIT_AS": bound + ADDRESS_SPACE_HEADROOM, "RLIMIT_CPU": 120, "RLIMIT_FSIZE": 1 << 30,
        "RLIMIT_NOFILE": 256, "RLIMIT_CORE": 0,
    }
    group = cgroups.ChildCgroup.create(1 << 30, 64)
    if group is not None:
        group.remove()
    assert (user_processes == 4096) is (group is None or group.tasks is None), user_processes
    assert attack["cwd"] == attack["folder"] == attack["tmpdir"] == attack["home"]
    assert not Path(attack["folder"]).exists()


def test_the_memory_bound_stays_below_what_the_host_has_free() -> None:
    free = memory_limit.available_bytes()
    assert free is not None
    assert memory_limit.bound(1 << 50) <= 0.8 * free + 1
    assert memory_limit.bound(256 << 20) == 256 << 20


def test_on_a_gpu_the_address_space_is_not_limited() -> None:
    result = run_isolated(PROBE, {"mode": "report", "port": 9, "unix_socket": "/nonexistent",
                                  "outside": "/nonexistent/x", "parent_pid": 1, "secret": SECRET},
                          _keep, gpu=True)
    assert result["limits"]["RLIMIT_AS"] == -1  # RLIM_INFINITY: CUDA maps far more than it uses


def test_going_over_the_memory_bound_is_a_resource_limit_and_the_parent_survives() -> None:
    """Without the address-space rlimit (as on a GPU) the kernel's cgroup, or the parent's poll of the
    tree's resident memory, stops a child that touches 1.5 GiB under a 256 MiB bound."""
    with pytest.raises(ResourceLimit, match="memory limit of 256 MiB"):
        run_isolated(PROBE, {"mode": "allocate", "bytes": 3 << 29}, _keep,
                     limits=ChildLimits(memory_bytes=256 << 20), gpu=True)
    result = run_isolated(PROBE, {"mode": "allocate", "bytes": 64 << 20}, _keep,
                          limits=ChildLimits(memory_bytes=512 << 20), gpu=True)
    assert result["allocated"] == 64 << 20


def test_a_child_past_its_time_limit_is_killed_with_every_process_it_started() -> None:
    tag = _tag()
    with pytest.raises(TimeLimit, match="ran past 8 s"):
        run_isolated(PROBE, {"mode": "hang", "tag": tag}, _keep, limits=ChildLimits(wall_s=8))
    assert _gone(tag)


class Cancelled(Exception):
    pass


def test_an_exception_in_the_parent_kills_the_child_and_removes_its_folder() -> None:
    """A cancel reaches the computation as an exception from the progress callback. The child's folder
    is the sleeper's working directory, read from the host's ``/proc`` (other children of this and
    other test processes have folders of their own meanwhile)."""
    tag = _tag()
    seen: dict[str, Any] = {}

    def cancel(stage: str, done: int, _total: int) -> None:
        deadline = time.monotonic() + 30  # the sleeper is started just before this message: let it exec
        while not _running(tag) and time.monotonic() < deadline:
            time.sleep(0.1)
        sleeper = _sleeper(tag)
        seen["running"] = sleeper is not None
        seen["folder"] = Path(os.readlink(f"/proc/{sleeper}/cwd")) if sleeper else None
        seen["existed"] = seen["folder"] is not None and (seen["folder"] / "stderr.log").is_file()
        raise Cancelled

    with pytest.raises(Cancelled):
        run_isolated(PROBE, {"mode": "hang", "tag": tag}, _keep, on_progress=cancel)
    assert seen["running"]  # the survivor to be was there ...
    assert _gone(tag)  # ... and is gone with the sandbox
    folder = seen["folder"]
    assert folder.parent == Path(tempfile.gettempdir()).resolve()
    assert folder.name.startswith("zootriage-child-") and seen["existed"]  # the child's, while it ran
    assert not folder.exists()


def test_a_killed_worker_takes_its_child_with_it() -> None:
    tag = _tag()
    worker = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        from pathlib import Path
        from zootriage.core.isolation import run_isolated
        run_isolated("{PROBE}", {{"mode": "hang", "tag": "{tag}"}}, lambda r, f: r)
    """)], cwd=Path(__file__).resolve().parents[2])
    try:
        deadline = time.monotonic() + 120
        while not _running(tag):
            assert time.monotonic() < deadline and worker.poll() is None, "the child never started"
            time.sleep(0.2)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        assert _gone(tag)
    finally:
        worker.kill()


def test_errors_come_back_with_their_code() -> None:
    with pytest.raises(CheckpointKeyMismatch, match=r"m\.pt does not fit"):
        run_isolated(PROBE, {"mode": "error"}, _keep)


def _tag() -> str:
    """A unique ``sleep`` argument, so the host's process table tells whether that sleeper lives."""
    return f"{600 + uuid.uuid4().int % 10**6 / 10**7:.7f}"


def _sleeper(tag: str) -> int | None:
    """The host pid of the live ``sleep <tag>``, if there is one."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
            except (OSError, IndexError):
                continue
            if argv[:2] == [b"sleep", tag.encode()] and state not in ("Z", "X"):
                return int(entry.name)
    return None


def _running(tag: str) -> bool:
    return _sleeper(tag) is not None


def _gone(tag: str) -> bool:
    """No live ``sleep <tag>`` on the host, polled for a few seconds (SIGKILL lands asynchronously)."""
    for _ in range(50):
        if not _running(tag):
            return True
        time.sleep(0.1)
    return False


def test_what_a_killed_worker_left_is_removed_by_the_next_child() -> None:
    """A SIGKILLed worker cannot remove its children's folder and cgroups; their names carry its
    pid, and the next child any worker starts removes those of dead pids (and nothing else)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = Path(tempfile.gettempdir()) / f"zootriage-child-{gone.pid}-left"
    live = Path(tempfile.gettempdir()) / f"zootriage-child-{os.getpid()}-kept"
    dead.mkdir()
    live.mkdir()
    dead_groups = [root / dead.name for root in cgroups.V1_ROOTS.values()
                   if root.is_dir() and os.access(root, os.W_OK)]
    for group in dead_groups:
        group.mkdir()
    try:
        with pytest.raises(CheckpointKeyMismatch):
            run_isolated(PROBE, {"mode": "error"}, _keep)
        assert not dead.exists() and live.exists()
        assert not any(group.exists() for group in dead_groups)
    finally:
        live.rmdir()
        for group in dead_groups:
            if group.exists():
                group.rmdir()


def test_packages_on_the_workers_pythonpath_are_importable_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child's environment keeps ``PYTHONPATH``; its folders are shown to it read-only, so packages
    an operator installed there (here under /tmp, which the sandbox replaces with its own) import. The
    GPU machine's check installs its missing wheels that way (benchmarks/device_check.sh)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "zootriage_pythonpath_probe.py").write_text("VALUE = 'found'\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(site)])))
    result = run_isolated(PROBE, {"mode": "import", "name": "zootriage_pythonpath_probe"}, _keep)
    assert result["value"] == "found"
