"""Private servers a test can stop and start again: a redis-server and a PostgreSQL cluster.

Each listens on its own free loopback port and keeps its files in its own temporary folder, so a
test that restarts or stops one never touches the machine's shared services. Redis keeps nothing on
disk: a restart loses every message, as a Redis without persistence does in production.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from pathlib import Path

from tests.integration.stack import free_port


def _wait_for_port(port: int, alive: subprocess.Popen[bytes] | None, what: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if (alive is not None and alive.poll() is not None) or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start on port {port}") from None
            time.sleep(0.05)


class LoopbackProcess(ABC):
    """A server process of ours on a free loopback port: started, waited for until the port answers,
    stopped (and started again) at will. Subclasses say what to run (:meth:`command`)."""

    what = "server"

    def __init__(self) -> None:
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @abstractmethod
    def command(self) -> list[str]:
        """The server's command line, listening on ``self.port``."""

    def start(self) -> None:
        self._process = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_port(self.port, self._process, self.what)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
            self._process = None


class RedisServer(LoopbackProcess):
    what = "redis-server"

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="zt-redis-")

    @property
    def url(self) -> str:
        """The server's URL without a database number."""
        return f"redis://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        log = os.path.join(self.folder, "redis.log")
        return ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                "--appendonly", "no", "--dir", self.folder, "--logfile", log]  # fmt: skip

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


class PostgresCluster:
    """A throwaway cluster (initdb, trust auth) run as the ``postgres`` user when the tests are root."""

    def __init__(self) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="zt-pg-"))
        self.data = self.folder / "data"
        binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not binaries:
            raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
        self._bin = Path(binaries[-1]).parent
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str, check: bool = True) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*as_postgres, str(self._bin / tool), *args], check=check, capture_output=True)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.folder / "log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start")
        _wait_for_port(self.port, None, "PostgreSQL")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)


class S3Server(LoopbackProcess):
    """moto's S3-compatible server on a free loopback port (the object store of a deployment)."""

    what = "moto S3 server"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
