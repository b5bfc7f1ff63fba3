"""Hostile code for the sandbox tests, run inside a real child: every way back to the host that an
attacker with code execution would try, each reported as what happened (never assumed)."""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from zootriage.core.confine import emit, receive

LIMITS = ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_CORE")
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x20000
_libc = ctypes.CDLL(None, use_errno=True)


def _outcome(call: Any) -> str:
    """``ok`` or the error a call ended with (``OSError`` names, or ``errno N`` for libc calls)."""
    try:
        result = call()
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    if isinstance(result, int) and result < 0:
        return f"errno {ctypes.get_errno()}"
    return "ok"


def _connect_tcp(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def _connect_unix(path: str) -> None:
    with socket.socket(socket.AF_UNIX) as unix:
        unix.settimeout(5)
        unix.connect(path)


def _setns_net() -> int:
    """Re-enter a network namespace: the first process's own, the only one whose handle it can open."""
    fd = os.open("/proc/1/ns/net", os.O_RDONLY)
    try:
        return int(_libc.setns(fd, CLONE_NEWNET))
    finally:
        os.close(fd)


def _write(path: str) -> None:
    Path(path).write_text("written from the sandbox")


def _environments() -> list[str]:
    """Every environment this process can read through /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "environ").read_bytes().decode(errors="replace"))
            except OSError:
                continue
    return found


def _command_lines() -> list[str]:
    lines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue
    return lines


_SYSCALLS = {"x86_64": {"io_uring_setup": 425, "kcmp": 312}, "aarch64": {"io_uring_setup": 425, "kcmp": 272}}


def _syscall(name: str, *args: int) -> int:
    import platform

    return int(_libc.syscall(_SYSCALLS[platform.machine()][name], *args))


def _io_uring() -> int:
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    return _syscall("io_uring_setup", 4, ctypes.addressof(params))


def _adjtimex() -> int:
    timex = ctypes.create_string_buffer(208)  # struct timex, modes 0: a read of the clock's state
    return int(_libc.adjtimex(timex))


def _descriptors() -> list[str]:
    """What each open descriptor of this process points at."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
    return found


def _tmpfs_bytes(path: str) -> int:
    stats = os.statvfs(path)
    return stats.f_blocks * stats.f_frsize


def report(request: dict[str, Any]) -> dict[str, Any]:
    print("a library printing to stdout cannot forge a protocol line")
    return {
        "uid": os.getuid(),
        "euid": os.geteuid(),
        "groups": os.getgroups(),
        "pid": os.getpid(),
        "network": _outcome(lambda: _connect_tcp(request["port"])),
        "unix_socket": _outcome(lambda: _connect_unix(request["unix_socket"])),
        "setns": _outcome(_setns_net),
        "unshare_user": _outcome(lambda: _libc.unshare(CLONE_NEWUSER)),
        "unshare_mount": _outcome(lambda: _libc.unshare(CLONE_NEWNS)),
        "mount": _outcome(lambda: _libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
        "ptrace": _outcome(lambda: _libc.ptrace(16, 1, None, None)),  # PTRACE_ATTACH to pid 1
        "shadow": _outcome(lambda: Path("/etc/shadow").read_bytes()),
        "write_outside": _outcome(lambda: _write(request["outside"])),
        "write_python": _outcome(lambda: _write(str(Path(sys.prefix) / "zootriage-was-here"))),
        "signal_parent": _outcome(lambda: os.kill(request["parent_pid"], 0)),
        "io_uring": _outcome(_io_uring),
        "kcmp": _outcome(lambda: _syscall("kcmp", os.getpid(), os.getpid(), 0, 0, 0)),
        "adjtimex": _outcome(_adjtimex),
        "personality_query": _outcome(lambda: _libc.personality(0xFFFFFFFF)),
        "personality_exec": _outcome(lambda: _libc.personality(0x0400000)),  # READ_IMPLIES_EXEC
        "hf_token": _outcome(lambda: (Path(os.environ["HF_HOME"]) / "token").read_bytes()),
        "descriptors": _descriptors(),
        "tmpfs": {path: _tmpfs_bytes(path) for path in ("/tmp", "/dev/shm")},
        "secret_seen": any(request["secret"] in text for text in _environments()),
        # the sandbox's own first process is bubblewrap, whose command line names the binds (a test's
        # folders among them): any other line naming pytest would be a host process seen from inside
        "host_commands": [
            line for line in _command_lines()
            if "pytest" in line and not line.split(" ")[0].endswith("/bwrap")
        ],
        "visible_pids": sorted(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()),
        "limits": {name: resource.getrlimit(getattr(resource, name))[0] for name in LIMITS},
        "cwd": os.getcwd(),
        "tmpdir": os.environ.get("TMPDIR"),
        "home": os.environ.get("HOME"),
        "env": sorted(os.environ),
    }


def mapped(folder: str) -> dict[str, Any]:
    """builtin:mnist opened through the decoded files of ``folder`` (``core.data.mapped``), and every
    way to change those files tried: a new file, an existing one rewritten, renamed, removed."""
    os.environ["ZOOTRIAGE_CHILD_DECODED_DIR"] = folder
    from zootriage.core.data.builtin import open_builtin

    images = open_builtin("mnist", "test").loader.images  # type: ignore[attr-defined]
    existing = sorted(Path(folder).glob("*.npy"))[0]
    return {
        "kind": type(images).__name__,
        "checksum": int(images[:100].sum()),
        "create": _outcome(lambda: _write(str(Path(folder) / "planted.npy"))),
        "rewrite": _outcome(lambda: existing.open("r+b").write(b"\x00")),
        "rename": _outcome(lambda: existing.rename(existing.with_suffix(".old"))),
        "remove": _outcome(existing.unlink),
    }


def plant(request: dict[str, Any]) -> None:
    """What code in a child can do to its own folder before its parent touches it again: links
    (``links``: name → a host path), FIFOs (``fifos``), a file of ``big`` bytes, and its stderr.log
    renamed away with a link to ``stderr_to`` at its name. Then it answers ``planted``, or with
    ``garbage`` a line that is not JSON (its parent then logs the end of its stderr)."""
    for name, target in request.get("links", {}).items():
        os.symlink(target, name)
    for name in request.get("fifos", []):
        os.mkfifo(name)
    if "big" in request:
        Path("extraction.safetensors").write_bytes(b"\0" * request["big"])
    print("the last words of the child", file=sys.stderr, flush=True)
    if "stderr_to" in request:
        os.rename("stderr.log", "moved.log")
        os.symlink(request["stderr_to"], "stderr.log")
    if request.get("garbage"):
        from zootriage.core import confine

        assert confine._channel is not None
        confine._channel.write("not a protocol line\n")
        confine._channel.flush()
        time.sleep(600)
    emit({"result": {"planted": True}})
    time.sleep(600)  # alive while its parent stages and reads


def forks() -> dict[str, Any]:
    """Processes started until the kernel refuses one (each sleeps until the sandbox ends)."""
    count = 0
    while count < 100_000:
        try:
            pid = os.fork()
        except OSError as exc:
            return {"forks": count, "error": exc.errno}
        if pid == 0:
            time.sleep(600)
            os._exit(0)
        count += 1
    return {"forks": count, "error": None}


def main() -> None:
    request = receive()
    mode = request["mode"]
    if mode == "hang":
        # A survivor would have to outlive its sandbox: a new session of its own, signals ignored.
        subprocess.Popen(["setsid", "sleep", request["tag"]], start_new_session=True)
        emit({"progress": ["sleeper", 1, 1]})
        time.sleep(600)
    elif mode == "mapped":
        emit({"result": mapped(request["folder"])})
    elif mode == "import":  # a module found through PYTHONPATH
        emit({"result": {"value": importlib.import_module(request["name"]).VALUE}})
    elif mode == "plant":
        plant(request)
    elif mode == "forks":
        emit({"result": forks()})
    elif mode == "describe":  # answers an extraction request with whatever description it was given
        emit({"result": request["described"]})
    elif mode == "error":
        emit({"error": {"code": "checkpoint_key_mismatch", "message": "m.pt does not fit"}})
    elif mode == "allocate":
        block = bytearray(request["bytes"])  # touched page by page, so it is resident, not just mapped
        for offset in range(0, len(block), 4096):
            block[offset] = 1
        emit({"result": {"allocated": len(block)}})
    else:
        emit({"result": report(request)})


if __name__ == "__main__":
    main()
