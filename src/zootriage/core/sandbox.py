"""The sandbox a child runs in: a bubblewrap (``bwrap``) command line built for one job.

Why bubblewrap: it is small, audited, packaged by Debian, and sets up in one exec everything the
child needs to have no way back to the host — its own PID namespace (no signals out; when its first
process dies the kernel kills every process left in it, ``setsid`` grandchildren included), network
namespace (no interfaces but a down loopback), IPC, UTS and cgroup namespaces, a mount namespace that
shows only what the child needs, read-only, plus its own folder and a private ``/tmp``, a fresh
``/proc`` (its own processes only), a minimal ``/dev``, ``--die-with-parent``, no capabilities, and a
seccomp filter (:mod:`core.seccomp`) that refuses ``setns``, ``unshare``, ``mount``, ``ptrace`` and
the like.

Who the child is:

- as root, bwrap runs privileged (it can bind anything, e.g. a Python under ``/root``) and then
  ``setpriv`` drops the command to the sandbox user (``ZOOTRIAGE_SANDBOX_USER``, default the system
  user ``zootriage-sandbox`` where it exists, else ``nobody``): an unprivileged uid on the host, no
  supplementary groups, an empty bounding set, ``no_new_privs``. Whatever escapes a namespace lands as
  that uid, which owns nothing but the child's folder;
- as any other user, bwrap makes a user namespace (``--unshare-user``) and the child keeps that
  user's uid outside it, with no capabilities.

What it sees, read-only and at the same paths as outside (so paths in a request stay valid): ``/usr``
and the ``/lib``/``/bin`` links, the dynamic loader's files under ``/etc``, the Python installation
and virtual environment, the code of the module it runs, the data roots of its request, the model
caches (``TORCH_HOME``, ``HF_HUB_CACHE``; not ``HF_HOME``, where the hub keeps a token), the decoded
builtin sets (``core.data.mapped``), CPU topology in ``/sys``; on a GPU also ``/dev/nvidia*`` and
``/sys``. Read-write: only its own folder, and its own ``/tmp`` and ``/dev/shm``, each a memory file
system no larger than its memory bound. Nothing else of the host — no ``/etc/shadow``, no PostgreSQL
socket, no state folder, no other job's files — exists inside.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zootriage.core import seccomp

SANDBOX_USER_ENV = "ZOOTRIAGE_SANDBOX_USER"
DEDICATED_USER = "zootriage-sandbox"
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
_ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


@dataclass(frozen=True)
class SandboxUser:
    """The host uid/gid a root worker's children run as."""

    name: str
    uid: int
    gid: int


@dataclass
class Plan:
    """One child's sandbox: the command prefix and the file descriptors it needs passed."""

    prefix: list[str]
    pass_fds: tuple[int, ...] = ()
    close: list[int] = field(default_factory=list)


def sandbox_user() -> SandboxUser:
    """The configured user (a name or a number), else ``zootriage-sandbox``, else ``nobody``."""
    wanted = os.environ.get(SANDBOX_USER_ENV, "").strip()
    for name in filter(None, (wanted, DEDICATED_USER, "nobody")):
        try:
            record = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
        except (KeyError, ValueError):
            if name.isdigit():
                return SandboxUser(name, int(name), int(name))
            if name == wanted:
                raise ValueError(f"{SANDBOX_USER_ENV}={wanted!r} names no user on this machine") from None
            continue
        if record.pw_uid == 0:
            raise ValueError(f"{SANDBOX_USER_ENV} must name an unprivileged user, not {name!r}")
        return SandboxUser(record.pw_name, record.pw_uid, record.pw_gid)
    return SandboxUser("nobody", 65534, 65534)


def readable_paths(module: str, data_roots: Iterable[str | Path], env: dict[str, str]) -> list[Path]:
    """What the child reads: the Python installation, the module's package and ours, the folders of the
    ``PYTHONPATH`` its environment keeps (an operator's packages installed outside the installation;
    absolute folders only, the root folder never), data roots, model caches (every path resolved:
    binds are made at real paths, so links inside still work)."""
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sysconfig.get_paths()["purelib"]}
    paths = [Path(p) for p in python]
    for top in {module.split(".")[0], "zootriage"}:
        spec = importlib.util.find_spec(top)
        if spec is not None and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                package = Path(location)
                paths.append(package)
    imports = env.get("PYTHONPATH", "").split(os.pathsep)
    paths += [Path(entry) for entry in imports if os.path.isabs(entry) and entry.strip("/")]
    paths += [Path(root) for root in data_roots]
    # the model caches: HF_HOME is not among them (it holds the hub's token where someone logged in)
    paths += [Path(env[name]) for name in ("TORCH_HOME", "HF_HUB_CACHE") if name in env]
    paths += [Path("/etc") / name for name in _ETC]
    paths.append(Path("/sys/devices/system/cpu"))
    return _topmost(p.resolve() for p in paths if p.exists())


def _topmost(paths: Iterable[Path]) -> list[Path]:
    """Drop paths inside another one (already visible through it); parents first."""
    kept: list[Path] = []
    for path in sorted(set(paths), key=lambda p: (len(p.parts), str(p))):
        if not any(path.is_relative_to(parent) for parent in kept):
            kept.append(path)
    return kept


def command(
    folder: Path, readable: Sequence[Path], *, gpu: bool, user: SandboxUser | None, tmp_bytes: int,
) -> Plan:
    """The ``bwrap ... [setpriv ...] --`` prefix for a child whose only writable place is ``folder``.

    ``user`` is the sandbox user when the worker runs as root (bwrap privileged, then ``setpriv``
    drops to it), ``None`` otherwise (bwrap makes a user namespace). ``tmp_bytes`` bounds each of its
    two memory file systems, ``/tmp`` and ``/dev/shm`` (the kernel's default is half the host's memory
    each, which neither the address-space rlimit nor a poll of resident memory counts)."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    size = str(tmp_bytes)
    args = [
        bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try", "--die-with-parent", "--new-session",
        "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm",
        "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
        "--ro-bind", "/usr", "/usr",
    ]
    if user is None:
        args += ["--unshare-user", "--cap-drop", "ALL"]
    for name in _ROOT_LINKS:
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    made = {Path("/"), Path("/tmp"), Path("/dev"), Path("/proc"), Path("/usr")}
    binds = [(p, "--ro-bind") for p in readable if not p.is_relative_to("/usr")]
    binds.append((folder.resolve(), "--bind"))
    if gpu:
        binds.append((Path("/sys"), "--ro-bind"))
        for device in sorted(Path("/dev").glob("nvidia*")):
            args += ["--dev-bind", str(device), str(device)]
    for path, how in binds:
        for parent in reversed(path.parents):
            if parent not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        args += [how, str(path), str(path)]
        made.add(path)
    read_fd, write_fd = os.pipe()
    with os.fdopen(write_fd, "wb") as pipe:
        pipe.write(seccomp.program())  # a few hundred bytes: never blocks on the pipe
    args += ["--seccomp", str(read_fd), "--chdir", str(folder.resolve())]
    if user is not None:
        args += [
            "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP",
            "--", shutil.which("setpriv") or "setpriv", f"--reuid={user.uid}", f"--regid={user.gid}",
            "--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all",
        ]
    args.append("--")
    return Plan(args, pass_fds=(read_fd,), close=[read_fd])


@functools.cache
def unavailable_reason() -> str | None:
    """Why bubblewrap cannot sandbox children here (``None`` when it can): checked once by running a
    real sandbox around ``python -c pass``."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    if not seccomp.supported():
        return "no seccomp table for this architecture"
    root = os.geteuid() == 0
    if root and shutil.which("setpriv") is None:
        return "setpriv (util-linux) is missing"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="zootriage-probe-") as folder:
        user = sandbox_user() if root else None
        if user is not None:
            os.chown(folder, user.uid, user.gid)
        plan = command(Path(folder), readable_paths("zootriage", (), {}), gpu=False, user=user,
                       tmp_bytes=64 << 20)
        try:
            probe = subprocess.run(
                [*plan.prefix, sys.executable, "-c", "pass"], pass_fds=plan.pass_fds,
                capture_output=True, timeout=60, check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap failed to start: {exc}"
        finally:
            for fd in plan.close:
                os.close(fd)
    if probe.returncode != 0:
        return f"bubblewrap failed: {probe.stderr.decode(errors='replace').strip()[:300]}"
    return None
