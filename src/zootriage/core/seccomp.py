"""The sandbox's system-call filter: a classic BPF program for ``bwrap --seccomp FD``.

The child already has no capabilities, no network, its own PID and mount namespaces and an
unprivileged uid; the filter closes the calls that would let code inside reach back out or widen its
view even if one of those layers failed:

- namespaces: ``setns`` (re-entering the parent's network namespace), ``unshare``, ``clone`` with any
  ``CLONE_NEW*`` flag (checked on the flags argument), ``clone3`` (its flags sit in a struct the
  filter cannot read, so it answers ``ENOSYS`` and glibc falls back to ``clone``);
- mounts and roots: ``mount``, ``umount2``, ``pivot_root``, ``chroot`` and the new mount API;
- other processes and the kernel: ``ptrace``, ``process_vm_readv/writev``, ``pidfd_getfd``,
  ``bpf``, ``perf_event_open``, ``userfaultfd``, ``kcmp``, ``io_uring`` (a large kernel surface no
  library of ours uses), the keyring, modules, kexec, ``reboot``, setting or adjusting clocks, swap,
  quotas, ``syslog``, ``acct``, file handles (``open_by_handle_at`` can escape a bind mount), and
  ``personality`` with any value but the query and plain Linux (no ``READ_IMPLIES_EXEC``, no
  ``ADDR_NO_RANDOMIZE``).

Every other call is allowed, so torch and its libraries run unchanged; a denied call returns
``EPERM``. A call made through another ABI (x32 on x86_64, or a foreign architecture) kills the
process: a filter keyed on one table of numbers must not be bypassed through another.

The program (``struct sock_filter`` = ``u16 code, u8 jt, u8 jf, u32 k``, host byte order) reads
``struct seccomp_data``: ``nr`` at offset 0, ``arch`` at 4, ``args[i]`` at ``16 + 8 i`` (the low
32 bits first on little-endian hosts, where the clone flags are).
"""

from __future__ import annotations

import errno
import platform
import struct

# BPF opcodes (linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JSET_K = 0x45
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
_X32_BIT = 0x40000000
# CLONE_NEWTIME | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWNS
PERSONALITY_QUERY = 0xFFFFFFFF
CLONE_NEW_FLAGS = 0x80 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x20000

DENIED = (
    "setns", "unshare", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
    "fspick", "move_mount", "open_tree", "mount_setattr", "ptrace", "process_vm_readv",
    "process_vm_writev", "pidfd_getfd", "process_madvise", "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "reboot", "settimeofday", "clock_settime", "swapon", "swapoff", "quotactl",
    "syslog", "acct", "vhangup", "lookup_dcookie", "name_to_handle_at", "open_by_handle_at",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "adjtimex", "clock_adjtime", "kcmp",
    "quotactl_fd",
)

# System-call numbers (asm/unistd_64.h for x86_64, asm-generic/unistd.h for aarch64).
_TABLES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "setns": 308, "unshare": 272, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429,
        "open_tree": 428, "mount_setattr": 442, "ptrace": 101, "process_vm_readv": 310,
        "process_vm_writev": 311, "pidfd_getfd": 438, "process_madvise": 440, "bpf": 321,
        "perf_event_open": 298, "userfaultfd": 323, "keyctl": 250, "add_key": 248, "request_key": 249,
        "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246,
        "kexec_file_load": 320, "reboot": 169, "settimeofday": 164, "clock_settime": 227,
        "swapon": 167, "swapoff": 168, "quotactl": 179, "syslog": 103, "acct": 163, "vhangup": 153,
        "lookup_dcookie": 212, "name_to_handle_at": 303, "open_by_handle_at": 304,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "adjtimex": 159,
        "clock_adjtime": 305, "kcmp": 312, "quotactl_fd": 443, "personality": 135,
        "clone": 56, "clone3": 435, "iopl": 172, "ioperm": 173,
    }),
    "aarch64": (0xC00000B7, {
        "setns": 268, "unshare": 97, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "move_mount": 429,
        "open_tree": 428, "mount_setattr": 442, "ptrace": 117, "process_vm_readv": 270,
        "process_vm_writev": 271, "pidfd_getfd": 438, "process_madvise": 440, "bpf": 280,
        "perf_event_open": 241, "userfaultfd": 282, "keyctl": 219, "add_key": 217, "request_key": 218,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "kexec_load": 104,
        "kexec_file_load": 294, "reboot": 142, "settimeofday": 170, "clock_settime": 112,
        "swapon": 224, "swapoff": 225, "quotactl": 60, "syslog": 116, "acct": 89, "vhangup": 58,
        "lookup_dcookie": 18, "name_to_handle_at": 264, "open_by_handle_at": 265,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "adjtimex": 171,
        "clock_adjtime": 266, "kcmp": 272, "quotactl_fd": 443, "personality": 92,
        "clone": 220, "clone3": 435,
    }),
}
_X86_ONLY = ("iopl", "ioperm")


def supported(machine: str | None = None) -> bool:
    return (machine or platform.machine()) in _TABLES


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes:
    """The compiled filter for this machine's architecture (``ValueError`` for one we have no table of)."""
    name = machine or platform.machine()
    if name not in _TABLES:
        raise ValueError(f"no seccomp table for {name}")
    arch, numbers = _TABLES[name]
    eperm = RET_ERRNO | errno.EPERM
    ops = [
        _op(_LD_W_ABS, 4),
        _op(_JEQ_K, arch, jt=1),
        _op(_RET_K, RET_KILL_PROCESS),
        _op(_LD_W_ABS, 0),
    ]
    if name == "x86_64":
        ops += [_op(_JSET_K, _X32_BIT, jf=1), _op(_RET_K, RET_KILL_PROCESS)]
    for call in (*DENIED, *(_X86_ONLY if name == "x86_64" else ())):
        ops += [_op(_JEQ_K, numbers[call], jf=1), _op(_RET_K, eperm)]
    ops += [_op(_JEQ_K, numbers["clone3"], jf=1), _op(_RET_K, RET_ERRNO | errno.ENOSYS)]
    # personality: only the query (0xffffffff) and plain Linux (0); no READ_IMPLIES_EXEC, no
    # ADDR_NO_RANDOMIZE and the like (the kernel reads the argument as 32 bits).
    ops += [
        _op(_JEQ_K, numbers["personality"], jf=5),
        _op(_LD_W_ABS, 16),
        _op(_JEQ_K, PERSONALITY_QUERY, jt=2),
        _op(_JEQ_K, 0, jt=1),
        _op(_RET_K, eperm),
        _op(_RET_K, RET_ALLOW),
    ]
    # clone: deny any namespace flag in its first argument (the A register is then the flags word).
    ops += [
        _op(_JEQ_K, numbers["clone"], jf=3),
        _op(_LD_W_ABS, 16),
        _op(_JSET_K, CLONE_NEW_FLAGS, jf=1),
        _op(_RET_K, eperm),
        _op(_RET_K, RET_ALLOW),
    ]
    return b"".join(ops)
