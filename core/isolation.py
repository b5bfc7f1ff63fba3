"""Running untrusted work (loading a checkpoint, reading a dataset) in a fresh, confined child process.

Why a child: torch's loaders can be made to run code (pickles, sympy expressions, native libraries);
the static check (``core.zoo.archive_check``) refuses every known way, and the child is the second
line. It is a fresh interpreter (never a fork of a parent that has torch, CUDA or a database
connection loaded), started with:

- no network: its own network namespace (``unshare -n``, or ``unshare -r -n`` for an unprivileged
  user where user namespaces are allowed); where neither works and we run as root, the low-privilege
  user ``nobody`` instead; otherwise only the limits below (logged, see :func:`isolation`);
- rlimits, set by :mod:`core.confine` before anything untrusted is read: address space (on the CPU;
  CUDA reserves far more virtual memory than it uses, so on a GPU the parent polls the child's RSS
  instead), CPU seconds, size of any file written, open files, no core dumps;
- a wall-clock limit, after which the parent kills the child's whole process group (the child leads
  its own session, so data-loading workers die with it); the same kill ends it on a cancel or any
  exception in the parent;
- a throw-away folder as working directory and ``TMPDIR``, removed afterwards, and an environment
  reduced to what Python, torch and the model caches need (no database or broker URLs).

The child talks back in JSON lines (:func:`core.confine.emit`); arrays come back as a file in the
throw-away folder, read by the caller's ``collect`` before the folder goes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import pwd
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from zootriage.core.confine import ENV
from zootriage.core.errors import CancelCheck, ResourceLimit, TimeLimit, ZooError, stop_if_cancelled

log = logging.getLogger(__name__)
T = TypeVar("T")
LOW_PRIVILEGE_USER = "nobody"
_KEPT_ENV = (
    "PATH", "PYTHONPATH", "HOME", "LANG", "LC_ALL", "TORCH_HOME", "HF_HOME", "HF_HUB_OFFLINE",
    "HF_HUB_CACHE", "XDG_CACHE_HOME", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH", "NVIDIA_VISIBLE_DEVICES", "TIMM_CACHE_DIR",
)


@dataclass(frozen=True)
class ChildLimits:
    wall_s: float = 3600.0
    cpu_s: int = 4 * 3600
    memory_bytes: int = 24 << 30  # address space on the CPU, resident memory on a GPU
    file_bytes: int = 8 << 30
    open_files: int = 1024
    line_bytes: int = 1 << 20  # one protocol line from the child


@dataclass(frozen=True)
class Isolation:
    """How children are confined on this machine, beyond the rlimits every child gets."""

    command: tuple[str, ...]  # prefix of the child's command line
    user: str | None

    def describe(self) -> str:
        if self.command:
            return f"children run in their own network namespace ({' '.join(self.command)}) with rlimits"
        if self.user:
            return f"no namespaces: children run as user {self.user!r} with rlimits (network reachable)"
        return "no namespaces and no low-privilege user: children run with rlimits only (network reachable)"


@functools.cache
def isolation() -> Isolation:
    """The strongest confinement available: try a network namespace, then a user switch."""
    unshare = shutil.which("unshare")
    for prefix in ((unshare, "-n"), (unshare, "-r", "-n")) if unshare else ():
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=20, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return Isolation(tuple(str(p) for p in prefix), None)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(LOW_PRIVILEGE_USER)
            return Isolation((), LOW_PRIVILEGE_USER)
        except KeyError:
            pass
    return Isolation((), None)


def run_isolated(
    module: str,
    request: dict[str, Any],
    collect: Callable[[dict[str, Any], Path], T],
    *,
    limits: ChildLimits | None = None,
    gpu: bool = False,
    inputs: dict[str, Path] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
    cancel: CancelCheck | None = None,
) -> T:
    """Run ``python -m module`` confined; it reads ``request.json`` from its working folder.

    ``inputs`` are files the child needs (name in its folder → source), linked or copied in so it can
    read them whatever user it runs as. The child's ``{"result": ...}`` line and its folder go to
    ``collect``; its ``{"error": {code, message}}`` is raised as the same ``ZooError``.
    """
    bounds = limits or ChildLimits()
    mode = isolation()
    folder = Path(tempfile.mkdtemp(prefix="zootriage-child-"))
    try:
        for name, source in (inputs or {}).items():
            _stage(source, folder / name)
        (folder / "request.json").write_text(json.dumps(request))
        if mode.user:
            record = pwd.getpwnam(mode.user)
            for path in [folder, *folder.iterdir()]:
                os.chown(path, record.pw_uid, record.pw_gid)
        with open(folder / "stderr.log", "wb") as stderr:
            proc = subprocess.Popen(
                [*mode.command, sys.executable, "-m", "zootriage.core.confine", module],
                cwd=folder,
                env=_environment(folder, bounds, gpu),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
                user=mode.user,
            )
            try:
                result = _converse(proc, bounds, gpu, on_progress or _ignore, cancel)
            finally:
                _kill_group(proc)
        return collect(result, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _stage(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
        if isolation().user is None:
            return
        target.unlink()  # a hard link keeps the source's owner and mode: copy for another user
    except OSError:
        pass
    shutil.copyfile(source, target)


def _environment(folder: Path, bounds: ChildLimits, gpu: bool) -> dict[str, str]:
    rlimits = {
        "RLIMIT_CPU": bounds.cpu_s,
        "RLIMIT_FSIZE": bounds.file_bytes,
        "RLIMIT_NOFILE": bounds.open_files,
        "RLIMIT_CORE": 0,
    }
    if not gpu:
        rlimits["RLIMIT_AS"] = bounds.memory_bytes
    env = {key: os.environ[key] for key in _KEPT_ENV if key in os.environ}
    here = str(Path(__file__).resolve().parent.parent)  # the child imports this very copy of core
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (here, env.get("PYTHONPATH"))))
    env["TMPDIR"] = str(folder)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env[ENV] = json.dumps({"rlimits": rlimits, "cwd": str(folder)})
    return env


def _converse(
    proc: subprocess.Popen[bytes],
    bounds: ChildLimits,
    gpu: bool,
    on_progress: Callable[[str, int, int], None],
    cancel: CancelCheck | None,
) -> dict[str, Any]:
    """Forward progress lines until the child's result, error, exit, a limit, or a cancel (polled
    at least every half second, also while the child is silent, e.g. loading a large model)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + bounds.wall_s
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    pending = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeLimit(f"loading the model and extracting features ran past {bounds.wall_s:g} s")
        if gpu and _rss(proc.pid) > bounds.memory_bytes:
            raise ResourceLimit(f"the model's process used over {bounds.memory_bytes >> 20} MiB of memory")
        stop_if_cancelled(cancel)
        if not selector.select(timeout=min(left, 0.5)):
            continue
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            message = _parse(line)
            if "progress" in message:
                stage, done, total = message["progress"]
                on_progress(str(stage), int(done), int(total))
            elif "result" in message:
                return dict(message["result"])
            elif "error" in message:
                raise _error(message["error"])
        if len(pending) > bounds.line_bytes:
            raise ResourceLimit("the model's process wrote an overlong message")
    code = proc.wait()
    raise ResourceLimit(_death(code))


def _parse(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError as exc:
        raise RuntimeError(f"the isolated child wrote a line that is not JSON: {line[:200]!r}") from exc
    if not isinstance(message, dict):
        raise RuntimeError("the isolated child wrote a message that is not an object")
    return message


def _error(error: Any) -> Exception:
    """The child's ``{code, message}`` as the ``ZooError`` of that code; an unknown code is our bug."""
    code, message = str(error.get("code")), str(error.get("message"))
    for cls in _zoo_errors(ZooError):
        if cls.code == code:
            return cls(message)
    return RuntimeError(f"{code}: {message}")


def _zoo_errors(cls: type[ZooError]) -> list[type[ZooError]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found += _zoo_errors(sub)
    return found


def _death(code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name
        why = {
            "SIGKILL": "it was killed (out of memory?)",
            "SIGXCPU": "it used up its CPU time limit",
            "SIGXFSZ": "it wrote a file over its size limit",
        }.get(name, "it crashed")
        return f"the model's process died with {name}: {why}"
    return f"the model's process exited with status {code} without a result (out of memory?)"


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's session (it and any workers it started), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _ignore(_stage: str, _done: int, _total: int) -> None:
    return None
