"""Running untrusted work (loading a checkpoint, reading a dataset) in a fresh, sandboxed child process.

Why a child: torch's loaders can be made to run code (pickles, sympy expressions, native libraries);
the static check (``core.zoo.archive_check``) refuses every known way, and the child is the second
line. It is a fresh interpreter (never a fork of a parent that has torch, CUDA or a database
connection loaded), started inside:

- the bubblewrap sandbox of :mod:`core.sandbox` where the machine allows it: an unprivileged uid, its
  own PID, network, mount, IPC and UTS namespaces, a read-only view of what it needs, a seccomp
  filter (:mod:`core.seccomp`). Where bubblewrap cannot run, the older, weaker modes: a network
  namespace (``unshare -n`` / ``unshare -r -n``), else the user ``nobody``, else rlimits alone — the
  worker logs which one at start (:func:`isolation`);
- a memory bound below what the host has free (:mod:`core.memory_limit`), enforced by a memory
  cgroup where one can be made, by the address-space rlimit on the CPU otherwise; a bound on its
  processes and threads, enforced by a pids cgroup of its own (:mod:`core.cgroups`), by
  ``RLIMIT_NPROC`` otherwise;
- rlimits, set by :mod:`core.confine` before anything untrusted is read: address space (on the CPU;
  CUDA reserves far more virtual memory than it uses, so on a GPU the cgroup or a poll of the resident
  memory of the child's tree bounds it), CPU seconds, size of any file written, open files, processes
  of its user (where no pids cgroup bounds them), no cores;
- a wall-clock limit, after which the parent kills the child; the same kill ends it on a cancel or any
  exception in the parent, and ``--die-with-parent`` ends it when the worker itself dies;
- a throw-away folder as working directory, ``HOME`` and ``TMPDIR``, removed afterwards, and an
  environment reduced to what Python, torch and the model caches need (no database or broker URLs).

The child talks back in JSON lines (:func:`core.confine.emit`); arrays come back as a file in the
throw-away folder, read by the caller's ``collect`` before the folder goes.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import logging
import os
import pwd
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from zootriage.core import cgroups, leftovers, memory_limit, sandbox
from zootriage.core.confine import ENV, GPU_ENV, OPTION_PREFIX
from zootriage.core.errors import CancelCheck, ResourceLimit, TimeLimit, ZooError, stop_if_cancelled
from zootriage.core.plain_text import cleaned

log = logging.getLogger(__name__)
T = TypeVar("T")
LOW_PRIVILEGE_USER = "nobody"
# Address space that is mapped but never resident: importing the CUDA build of torch alone maps
# ~3.5 GB (0.7 GB resident). The rlimit on address space is the memory bound plus this; the cgroup,
# where there is one, bounds resident memory at the bound itself.
ADDRESS_SPACE_HEADROOM = 4 << 30
MESSAGE_CHARS = 4000  # of an error message a child sends (its first line is what a job shows)
_KEPT_ENV = (
    "PATH", "PYTHONPATH", "HOME", "LANG", "LC_ALL", "TORCH_HOME", "HF_HOME", "HF_HUB_OFFLINE",
    "HF_HUB_CACHE", "XDG_CACHE_HOME", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH", "NVIDIA_VISIBLE_DEVICES", "TIMM_CACHE_DIR", "OMP_WAIT_POLICY",
)


@dataclass(frozen=True)
class ChildLimits:
    wall_s: float = 3600.0
    cpu_s: int = 4 * 3600
    memory_bytes: int = 24 << 30  # address space on the CPU, resident memory on a GPU
    file_bytes: int = 8 << 30
    open_files: int = 1024
    # processes and threads of the child (its pids cgroup; where there is none, RLIMIT_NPROC, which
    # counts them per user, across all its children): a job needs a few hundred (torch's threads,
    # data-loading workers); a fork bomb is stopped here instead of at the host's pid_max
    processes: int = 4096
    line_bytes: int = 1 << 20  # one protocol line from the child


@dataclass(frozen=True)
class Isolation:
    """How children are confined on this machine, beyond the rlimits every child gets."""

    command: tuple[str, ...]  # prefix of the child's command line (the older modes)
    user: str | None  # the user the child runs as (the bubblewrap sandbox as root, or ``nobody``)
    sandboxed: bool = False  # the bubblewrap sandbox of core.sandbox
    fallback_reason: str | None = None  # why there is no bubblewrap sandbox

    def describe(self) -> str:
        if self.sandboxed:
            who = f"as user {self.user!r}" if self.user else "in a user namespace"
            return (f"children run in a bubblewrap sandbox {who}: own PID, network, mount, IPC and UTS "
                    "namespaces, read-only view, seccomp filter, memory bound, rlimits")
        lead = f"NO SANDBOX ({self.fallback_reason}): " if self.fallback_reason else ""
        return lead + self._weaker()

    def _weaker(self) -> str:
        if self.command:
            return f"children run in their own network namespace ({' '.join(self.command)}) with rlimits"
        if self.user:
            return f"no namespaces: children run as user {self.user!r} with rlimits (network reachable)"
        return "no namespaces and no low-privilege user: children run with rlimits only (network reachable)"


@functools.cache
def isolation() -> Isolation:
    """The strongest confinement available: the bubblewrap sandbox, else a network namespace, else a
    user switch."""
    why = sandbox.unavailable_reason()
    if why is None:
        user = sandbox.sandbox_user() if os.geteuid() == 0 else None
        return Isolation((), user.name if user else None, sandboxed=True)
    log.warning("no bubblewrap sandbox for checkpoint children: %s", why)
    return _weaker_isolation(why)


def _weaker_isolation(why: str) -> Isolation:
    unshare = shutil.which("unshare")
    for prefix in ((unshare, "-n"), (unshare, "-r", "-n")) if unshare else ():
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=20, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return Isolation(tuple(str(p) for p in prefix), None, fallback_reason=why)
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(LOW_PRIVILEGE_USER)
            return Isolation((), LOW_PRIVILEGE_USER, fallback_reason=why)
        except KeyError:
            pass
    return Isolation((), None, fallback_reason=why)


class Child:
    """One started child: sandboxed, limits in force, waiting for its request on stdin.

    It can be started ahead of its job (a warm child, :mod:`core.warm_pool`: torch imported, nothing
    untrusted seen yet), then handed files (:meth:`stage`) and messages (:meth:`send`), and read
    (:meth:`receive`) until its result. It serves one job and is then closed: its processes killed,
    its cgroups and its folder removed."""

    def __init__(
        self, module: str, *, limits: ChildLimits | None = None, gpu: bool = False,
        readable: Sequence[str | Path] = (), options: Mapping[str, str] | None = None,
    ) -> None:
        """``options``: variables for ``module`` itself, set in the child's environment; their names
        start with ``ZOOTRIAGE_CHILD_`` so that none can replace what the confinement sets."""
        if any(not name.startswith(OPTION_PREFIX) for name in options or {}):
            raise ValueError(f"a child's options are named {OPTION_PREFIX}*, got {sorted(options or {})}")
        self.options = dict(options or {})
        self.after_close: list[Callable[[], None]] = []  # run once by close() (a warm pool's refill)
        self.bounds = limits or ChildLimits()
        self.mode = isolation()
        self.memory = memory_limit.bound(self.bounds.memory_bytes)
        self.gpu = gpu
        _sweep_folders()
        self.folder = Path(tempfile.mkdtemp(prefix=leftovers.new_name() + "-"))
        self.cgroup = cgroups.ChildCgroup.create(self.memory, self.bounds.processes)
        self.proc: subprocess.Popen[bytes] | None = None
        self._pending = b""
        self._stderr: int | None = None  # our descriptor of its stderr.log: read through it, not by path
        try:
            self._start(module, readable)
        except BaseException:
            self.close()
            raise

    def _start(self, module: str, readable: Sequence[str | Path]) -> None:
        owner = _owner(self.mode)
        if owner is not None:
            os.chown(self.folder, *owner)
        own_user = self.mode.sandboxed or self.mode.user is not None
        # RLIMIT_NPROC only where no group of the child's own counts its processes (module doc)
        user_count = own_user and (self.cgroup is None or self.cgroup.tasks is None)
        env = _environment(self.folder, self.bounds, self.gpu, self.memory, module, user_count)
        env.update(self.options)
        prefix: list[str] = list(self.mode.command)
        fds: list[int] = []
        if self.mode.sandboxed:
            user = sandbox.sandbox_user() if self.mode.user else None
            plan = sandbox.command(
                self.folder, sandbox.readable_paths(module, readable, env), gpu=self.gpu, user=user,
                tmp_bytes=self.memory,
            )
            prefix, fds = plan.prefix, list(plan.close)
        # The join descriptors are written by the forked process before exec and are not passed on: they
        # close at exec, so the child never holds the host's cgroup.procs.
        joins = self.cgroup.join_fds() if self.cgroup else []
        made = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        self._stderr = os.open(self.folder / "stderr.log", made, 0o644)
        try:
            self.proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", "zootriage.core.confine", module],
                cwd=self.folder,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                start_new_session=True,
                user=None if self.mode.sandboxed else self.mode.user,
                pass_fds=tuple(fds),
                preexec_fn=functools.partial(_join, joins) if joins else None,
            )
        finally:
            for fd in (*fds, *joins):
                os.close(fd)

    def stage(self, inputs: dict[str, Path]) -> None:
        """Files the child needs, linked or copied into its folder (name → source) so it can read them
        whatever user it runs as; its folder is bound into its view, so they appear there at once.

        The folder is the child's: code running in it may have planted a link or a FIFO under any
        name. So each file is made new (``O_EXCL | O_NOFOLLOW``) relative to a descriptor of the folder,
        written and handed over through its own descriptor, and a name already taken fails the job;
        nothing here follows a path the child could have changed."""
        owner = _owner(self.mode)
        folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            for name, source in inputs.items():
                _stage(source, name, folder, owner)
        finally:
            os.close(folder)

    def read_output(self, name: str, limit: int) -> bytes:
        """The bytes of the file ``name`` the child wrote in its folder, read as what the child may have
        made of it: not through a link, only a regular file (a FIFO or a device would block or never
        end), at most ``limit`` bytes (``ResourceLimit`` past it)."""
        folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError as exc:
            raise RuntimeError(f"the isolated child left no readable {name}: {exc.strerror}") from None
        finally:
            os.close(folder)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise RuntimeError(f"the isolated child's {name} is not a regular file")
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise ResourceLimit(f"the model's process wrote more than {limit} bytes of results, the most "
                                "that its request allows")
        return data

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send(self, message: dict[str, Any]) -> None:
        """One request line on the child's stdin (:func:`core.confine.receive` reads it)."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise self._why_dead(ResourceLimit(_death(self.proc.wait()))) from None

    def receive(
        self,
        until: str = "result",
        on_progress: Callable[[str, int, int], None] | None = None,
        cancel: CancelCheck | None = None,
    ) -> dict[str, Any]:
        """Progress lines forwarded until the child's ``{until: ...}`` line, whose value is returned; its
        ``{"error": ...}``, its death, a limit or a cancel raise."""
        assert self.proc is not None
        polled = self.memory if self.gpu and (self.cgroup is None or self.cgroup.memory is None) else None
        try:
            return _converse(self, until, polled, on_progress or _ignore, cancel)
        except ResourceLimit as exc:
            raise self._why_dead(exc) from None
        except RuntimeError:  # the child's internal_error: its traceback is for the operator
            self._log_tail()
            raise

    def _why_dead(self, exc: ResourceLimit) -> ResourceLimit:
        if self.cgroup is not None and self.cgroup.oom_killed():
            return ResourceLimit(_over_memory(self.memory))
        self._log_tail()
        if self.cgroup is not None and self.cgroup.tasks_refused():
            return ResourceLimit(f"{exc} (the model's process tried to run more than {self.bounds.processes} "
                                 "processes and threads, the most a job may)")
        return exc

    def _log_tail(self, limit: int = 4000) -> None:
        """The end of the child's stderr in the worker's log, read through our own descriptor (the
        child may have renamed the file and left a link or a FIFO at its name)."""
        if self._stderr is None:
            return
        with contextlib.suppress(OSError):
            size = os.fstat(self._stderr).st_size
            tail = os.pread(self._stderr, limit, max(0, size - limit))
            log.warning("the isolated child failed; the end of its output:\n%s",
                        tail.decode(errors="replace"))

    def kill(self) -> None:
        """SIGKILL the child's session now, without waiting for it to exit: once its answer is read, it
        runs nothing more while the caller goes on; :meth:`close` reaps it (its pid stays its own, a
        zombie, until then) and removes what it leaves."""
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def close(self) -> None:
        """Kill the child (and with it its whole sandbox), remove its cgroups and its folder."""
        if self.proc is not None:
            _kill_group(self.proc)
        if self.cgroup is not None:
            self.cgroup.remove()
        if self._stderr is not None:
            os.close(self._stderr)
            self._stderr = None
        shutil.rmtree(self.folder, ignore_errors=True)
        hooks, self.after_close = self.after_close, []
        for hook in hooks:
            hook()

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def run_isolated(
    module: str,
    request: dict[str, Any],
    collect: Callable[[dict[str, Any], Path], T],
    *,
    limits: ChildLimits | None = None,
    gpu: bool = False,
    inputs: dict[str, Path] | None = None,
    readable: Sequence[str | Path] = (),
    on_progress: Callable[[str, int, int], None] | None = None,
    cancel: CancelCheck | None = None,
) -> T:
    """Run ``python -m module`` confined, in a child of its own, with one request and one result.

    ``inputs`` are files the child needs (name in its folder → source); ``readable`` are folders it
    may read (data roots). The child's ``{"result": ...}`` and its folder go to ``collect``; its
    ``{"error": {code, message}}`` is raised as the same ``ZooError``.
    """
    with Child(module, limits=limits, gpu=gpu, readable=readable) as child:
        child.stage(inputs or {})
        child.send(request)
        return collect(child.receive("result", on_progress, cancel), child.folder)


def _sweep_folders() -> None:
    """Remove the folders of children whose worker was killed before it could."""
    for folder in leftovers.left_by_dead_workers(Path(tempfile.gettempdir())):
        shutil.rmtree(folder, ignore_errors=True)


def _owner(mode: Isolation) -> tuple[int, int] | None:
    """The uid and gid the child's folder is handed to (``None``: it stays ours)."""
    if mode.sandboxed and mode.user:
        user = sandbox.sandbox_user()
        return user.uid, user.gid
    if mode.user:
        record = pwd.getpwnam(mode.user)
        return record.pw_uid, record.pw_gid
    return None


def _over_memory(memory: int) -> str:
    return (f"the model's process went over its memory limit of {memory >> 20} MiB (the smaller of "
            "ZOOTRIAGE_CHILD_MEMORY_BYTES and 80 % of the memory the host had free); use a smaller "
            "model, batch or image size, or a machine with more memory")


def _stage(source: Path, name: str, folder: int, owner: tuple[int, int] | None) -> None:
    """``source`` as ``name`` in the folder of descriptor ``folder``: hard-linked where the child runs
    as us (``link`` never follows a link at its target), else copied into a file made new and handed to
    the child's user through its descriptor (a hard link would keep the source's owner and mode)."""
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"a staged file is named by a plain file name, not {name!r}")
    try:
        if owner is None:
            with contextlib.suppress(OSError):
                os.link(source, name, dst_dir_fd=folder)
                return
        target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                         dir_fd=folder)
    except FileExistsError:
        raise RuntimeError(f"the isolated child's folder already holds a {name!r}: not staged") from None
    with os.fdopen(target, "wb") as copy, open(source, "rb") as original:
        shutil.copyfileobj(original, copy, 1 << 20)
        if owner is not None:
            os.fchown(copy.fileno(), *owner)


def _import_roots(module: str) -> list[str]:
    """The folders the child imports from: the one holding this very ``zootriage`` (``src/`` in a
    checkout, site-packages when installed) and the one holding ``module``'s top package."""
    roots = [str(Path(__file__).resolve().parents[2])]
    spec = importlib.util.find_spec(module.split(".")[0])
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        root = str(Path(location).resolve().parent)
        if root not in roots:
            roots.append(root)
    return roots


def _environment(
    folder: Path, bounds: ChildLimits, gpu: bool, memory: int, module: str, user_count: bool
) -> dict[str, str]:
    """The child's whole environment: what Python, torch and the model caches need, the caches named
    by absolute path (its ``HOME`` is its own folder), and its limits for :mod:`core.confine`.

    ``RLIMIT_NPROC`` (``user_count``) counts every process of the child's user: the caller asks for it
    only where no pids cgroup counts the child's own, and where that user is the child's own (the
    sandbox user, a user namespace's, ``nobody``), never where the child runs as the worker's own user,
    whose other processes would count against it."""
    rlimits = {
        "RLIMIT_CPU": bounds.cpu_s,
        "RLIMIT_FSIZE": bounds.file_bytes,
        "RLIMIT_NOFILE": bounds.open_files,
        "RLIMIT_CORE": 0,
    }
    if user_count:
        rlimits["RLIMIT_NPROC"] = bounds.processes
    if not gpu:
        rlimits["RLIMIT_AS"] = memory + ADDRESS_SPACE_HEADROOM
    env = {key: os.environ[key] for key in _KEPT_ENV if key in os.environ}
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    env.setdefault("TORCH_HOME", str(cache / "torch"))
    env.setdefault("HF_HOME", str(cache / "huggingface"))
    # the hub's model cache alone is shown to the sandbox, never HF_HOME itself (its token file)
    env.setdefault("HF_HUB_CACHE", str(Path(env["HF_HOME"]) / "hub"))
    for name in ("TORCH_HOME", "HF_HUB_CACHE"):
        # made now if missing: a sandbox's view is fixed when it starts (a warm child's before its
        # job), so a cache first created later (a download, weights placed by hand) would be missing
        with contextlib.suppress(OSError):
            Path(env[name]).mkdir(parents=True, exist_ok=True)
    # OpenMP's threads sleep at a barrier instead of spinning (an operator's own policy is kept): a
    # spinning thread holds a core the other threads and processes of a busy machine need, and the
    # child's forward pass ran 5-10x slower with two threads on the loaded 2-core build machine
    # (benchmarks/warm_job.py). Read once, when torch loads OpenMP: so set here, not in the child.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env.update(HOME=str(folder), USER="sandbox", LOGNAME="sandbox")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (*_import_roots(module), env.get("PYTHONPATH"))))
    env["TMPDIR"] = str(folder)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env[ENV] = json.dumps({"rlimits": rlimits, "cwd": str(folder)})
    if gpu:
        env[GPU_ENV] = "1"
    return env


def _converse(
    child: Child,
    until: str,
    polled_memory: int | None,
    on_progress: Callable[[str, int, int], None],
    cancel: CancelCheck | None,
) -> dict[str, Any]:
    """Forward progress lines until the child's ``until`` line, an error, its exit, a limit, or a
    cancel (polled at least every half second, also while the child is silent, e.g. loading a large
    model). ``polled_memory``: the bound on the resident memory of the child's whole tree, checked
    at each poll (on a GPU without a memory cgroup). Lines of other kinds (``ready``) are skipped."""
    proc, bounds = child.proc, child.bounds
    assert proc is not None and proc.stdout is not None
    deadline = time.monotonic() + bounds.wall_s
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    while True:
        while b"\n" in child._pending:
            line, child._pending = child._pending.split(b"\n", 1)
            message = _parse(line)
            if "progress" in message:
                stage, done, total = message["progress"]
                on_progress(str(stage), int(done), int(total))
            elif until in message:
                return dict(message[until])
            elif "error" in message:
                raise _error(message["error"])
        if len(child._pending) > bounds.line_bytes:
            raise ResourceLimit("the model's process wrote an overlong message")
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeLimit(f"loading the model and extracting features ran past {bounds.wall_s:g} s")
        if polled_memory is not None and _tree_rss(proc.pid) > polled_memory:
            raise ResourceLimit(_over_memory(polled_memory))
        stop_if_cancelled(cancel)
        if not selector.select(timeout=min(left, 0.5)):
            continue
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        if not chunk:
            raise ResourceLimit(_death(proc.wait()))
        child._pending += chunk


def _parse(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError as exc:
        raise RuntimeError(f"the isolated child wrote a line that is not JSON: {line[:200]!r}") from exc
    if not isinstance(message, dict):
        raise RuntimeError("the isolated child wrote a message that is not an object")
    return message


def _error(error: Any) -> Exception:
    """The child's ``{code, message}`` as the ``ZooError`` of that code; an unknown code is our bug.
    The message is the child's to choose: bounded, its control characters replaced (a log line of it
    cannot forge another, nor hold a NUL the database refuses)."""
    if not isinstance(error, dict):
        return RuntimeError("the isolated child wrote an error that is not an object")
    code, message = str(error.get("code"))[:64], cleaned(str(error.get("message"))[:MESSAGE_CHARS])
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


def _tree_rss(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants (the sandbox's processes sit below bwrap)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            with open(f"/proc/{current}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def _join(fds: list[int]) -> None:
    """In the forked child before it execs: join each of its cgroups (``0`` is the writer itself)."""
    for fd in fds:
        os.write(fd, b"0")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's session (it and any workers it started), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def _ignore(_stage: str, _done: int, _total: int) -> None:
    return None
