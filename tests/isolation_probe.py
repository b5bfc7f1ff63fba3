"""Run by the isolation tests inside a confined child: reports what the child can and cannot do."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import time
from pathlib import Path

from zootriage.core.confine import emit

LIMITS = ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE")


def main() -> None:
    request = json.loads(Path("request.json").read_text())
    if request["mode"] == "hang":
        sleeper = subprocess.Popen(["sleep", "600"])
        emit({"progress": ["sleeper", sleeper.pid, 0]})
        time.sleep(600)
    if request["mode"] == "error":
        emit({"error": {"code": "checkpoint_key_mismatch", "message": "m.pt does not fit"}})
        return
    try:
        with socket.create_connection(("127.0.0.1", request["port"]), timeout=5):
            connected = "connected"
    except OSError as exc:
        connected = f"refused: {exc}"
    print("a library printing to stdout cannot forge a protocol line")
    emit({"result": {
        "network": connected,
        "limits": {name: resource.getrlimit(getattr(resource, name))[0] for name in LIMITS},
        "cwd": os.getcwd(),
        "tmpdir": os.environ.get("TMPDIR"),
        "env": sorted(os.environ),
    }})


if __name__ == "__main__":
    main()
