"""The first code an isolated child runs (``python -m zootriage.core.confine MODULE``), before
anything untrusted.

Messages from the parent come one JSON object per line on stdin (:func:`receive`). It applies the
resource limits the parent chose (read from ``ZOOTRIAGE_CONFINE``: JSON of rlimit name
to value), moves into the throw-away working folder, and splits the output: the real stdout becomes
the protocol channel (one JSON object per line, see :func:`emit`) while fd 1 is pointed at stderr,
so nothing a library prints can forge a protocol line. Then it runs ``MODULE`` as ``__main__``.
The network namespace (``unshare -n``) or the low-privilege user is set up by the parent's command
line, outside this process.
"""

from __future__ import annotations

import json
import os
import resource
import runpy
import sys
from typing import IO, Any

ENV = "ZOOTRIAGE_CONFINE"
OPTION_PREFIX = "ZOOTRIAGE_CHILD_"  # the child's own options in its environment (isolation.Child)
GPU_ENV = "ZOOTRIAGE_CHILD_GPU"  # "1" in a child started for GPU work: its warm-up sets CUDA up too
# "1" in a child started for a job that already waits (no warm pool): it warms up only what every job
# needs, and opens the job's dataset and modules when the job asks (core.extraction_child.warm_up)
JOB_WAITING_ENV = "ZOOTRIAGE_CHILD_JOB_WAITING"
_channel: IO[str] | None = None


def emit(message: dict[str, Any]) -> None:
    """One protocol line to the parent: ``{"progress": [stage, done, total]}``, ``{"result": ...}`` or
    ``{"error": {"code", "message"}}``."""
    assert _channel is not None, "emit() is only for code run under core.confine"
    _channel.write(json.dumps(message) + "\n")
    _channel.flush()


def receive() -> dict[str, Any]:
    """The parent's next message (one JSON object per line on stdin); ``{}`` when it has closed."""
    line = sys.stdin.readline()
    return dict(json.loads(line)) if line.strip() else {}


def apply_limits(limits: dict[str, int]) -> None:
    """``setrlimit`` each named limit (soft = hard, so the child cannot raise it again)."""
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))


def main() -> None:
    from zootriage.core import confine  # this file runs as __main__; the child's code imports it by name

    config = json.loads(os.environ.pop(ENV))
    apply_limits(config["rlimits"])
    os.chdir(config["cwd"])
    confine._channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    module = sys.argv[1]
    sys.argv = [module]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
