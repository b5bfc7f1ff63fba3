"""The real service as separate processes: uvicorn serving the API, a Celery worker on Redis."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from zootriage.app.settings import Settings

# The service processes this test process started through this module ("api", "worker"): each costs
# seconds of CPU (both import torch), so the integration conftest prints the count after the session.
STARTED: Counter[str] = Counter()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def service_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The environment of the stack's processes: this one's, less any ZOOTRIAGE_ setting of its own (a
    developer's shell, a command run in-process), plus ``settings`` and ``extra``."""
    inherited = {key: value for key, value in os.environ.items() if not key.startswith("ZOOTRIAGE_")}
    env = {
        **inherited,
        "HF_HUB_OFFLINE": "1",
        "ZOOTRIAGE_STATE_DIR": str(settings.state_dir),
        "ZOOTRIAGE_DATABASE_URL": settings.effective_database_url,
        "ZOOTRIAGE_BROKER_URL": settings.effective_broker_url,
        "ZOOTRIAGE_DATA_ROOTS": ":".join(str(p) for p in settings.effective_data_roots),
        "ZOOTRIAGE_UPLOAD_LIMIT_BYTES": str(settings.upload_limit_bytes),
    }
    env.update(extra)
    return env


@dataclass
class Stack:
    base_url: str
    env: dict[str, str]
    logs: Path
    api: subprocess.Popen[bytes]
    worker: subprocess.Popen[bytes] | None = None
    started_workers: int = field(default=0)

    def start_worker(self) -> None:
        """A worker in its own process group, so that a kill takes its pool children with it."""
        self.started_workers += 1
        self.worker = worker_process(self.env, self.logs, self.started_workers)

    def wait_logged(self, *lines: str, timeout: float = 180) -> None:
        """Until the current worker's log holds one of ``lines``, the worker alive all the while."""
        log = self.logs / f"worker-{self.started_workers}.log"
        deadline = time.monotonic() + timeout
        while not any(line in log.read_text(errors="replace") for line in lines):
            assert self.worker is not None and self.worker.poll() is None, self.worker_log_tail()
            assert time.monotonic() < deadline, self.worker_log_tail()
            time.sleep(0.1)

    def wait_worker_ready(self, timeout: float = 180) -> None:
        """Until the current worker has connected and says it is ready to take tasks."""
        self.wait_logged(" ready.", timeout=timeout)

    def kill_worker(self) -> None:
        """SIGKILL the whole worker (main process, pool child, data loaders): nothing gets to clean up."""
        assert self.worker is not None
        os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait(timeout=30)
        self.worker = None

    def worker_log_tail(self, lines: int = 40) -> str:
        """The end of the current worker's log, for assertion messages."""
        log = self.logs / f"worker-{self.started_workers}.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])

    def wait_let_go(self, job_id: str, timeout: float = 120) -> None:
        """Until the current worker's log shows its extraction task for ``job_id`` ended. A job cancelled
        mid-extraction is final in its row at once, but its task lets go only at its next progress
        report; a test that ends before that leaves it to the next test's pause (``paused``), which
        then holds it, and with it the only pool process, until that test times out."""
        task = f"extract_features[{job_id}]"
        self.wait_logged(f"{task} succeeded", f"{task} raised", timeout=timeout)

    def kill_pool_child(self) -> None:
        """SIGKILL only the process running the task (as the OOM killer would); the worker lives on."""
        assert self.worker is not None
        children = subprocess.run(["pgrep", "-P", str(self.worker.pid)], capture_output=True, text=True)
        pids = [int(pid) for pid in children.stdout.split()]
        assert pids, "the worker has no pool process"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)

    def stop_worker(self) -> None:
        """A warm shutdown (SIGTERM), then SIGKILL if it takes longer than 30 s."""
        if self.worker is None:
            return
        os.killpg(self.worker.pid, signal.SIGTERM)
        try:
            self.worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.worker.pid, signal.SIGKILL)
            self.worker.wait(timeout=30)
        self.worker = None

    def stop(self) -> None:
        self.stop_worker()
        self.api.terminate()
        self.api.wait(timeout=30)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Close the worker's test pause (``worker/pause.py``) for the block: a job reaching its spot
        waits there until the block ends. Only for a stack started with ``pausable=True``."""
        release = Path(self.env[PAUSE_FILE])
        release.unlink()
        try:
            yield
        finally:
            release.touch()


def worker_process(env: dict[str, str], logs: Path, number: int) -> subprocess.Popen[bytes]:
    """Celery worker number ``number`` (node ``test<number>``), logging to ``worker-<number>.log``, in
    its own process group (:meth:`Stack.start_worker`)."""
    log = open(logs / f"worker-{number}.log", "wb")  # noqa: SIM115
    STARTED["worker"] += 1
    app = "zootriage.worker.celery_app"
    # No mingle (a second's wait at every start to sync revoked ids with other nodes, which the service
    # does not rely on: a revoke is best effort, the cancelled job row decides) and no gossip.
    command = [sys.executable, "-m", "celery", "-A", app, "worker", "--loglevel=INFO", "--without-mingle",
               "--without-gossip"]  # fmt: skip
    return subprocess.Popen(
        [*command, "-n", f"test{number}@%h"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


PAUSE_STAGE = "ZOOTRIAGE_TEST_PAUSE_STAGE"
PAUSE_FILE = "ZOOTRIAGE_TEST_PAUSE_FILE"


def start_api(settings: Settings, logs: Path, **extra_env: str) -> tuple[subprocess.Popen[bytes], str]:
    """uvicorn serving ``create_app`` on a free loopback port; returns the process and its base URL."""
    port = free_port()
    env = service_env(settings, **extra_env)
    STARTED["api"] += 1
    api_log = open(logs / "api.log", "wb")  # noqa: SIM115
    api = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "zootriage.app.main:create_app", "--factory", "--port", str(port)],
        env=env,
        stdout=api_log,
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # a shared 2-core machine can take minutes to import the stack
    while True:
        try:
            if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                return api, base_url
        except httpx.TransportError:
            pass
        if api.poll() is not None or time.monotonic() > deadline:
            api.kill()
            raise RuntimeError(f"the API did not start; see {logs / 'api.log'}")
        time.sleep(0.2)


def start_stack(
    settings: Settings, logs: Path, *, worker: bool = True, pausable: bool = False, **extra_env: str
) -> Stack:
    """The API and (unless ``worker=False``) a worker. ``pausable``: the worker has the test pause at
    ``extract:mid``, open until a test closes it with ``Stack.paused``."""
    if pausable:
        (logs / "pause-open").touch()
        extra_env = {PAUSE_STAGE: "extract:mid", PAUSE_FILE: str(logs / "pause-open"), **extra_env}
    env = service_env(settings, **extra_env)
    # The worker is started first: its imports (torch, seconds of CPU) overlap the API's start and the
    # wait for its health check, instead of following them.
    early = worker_process(env, logs, 1) if worker else None
    try:
        api, base_url = start_api(settings, logs, **extra_env)
    except BaseException:
        if early is not None:
            os.killpg(early.pid, signal.SIGKILL)
            early.wait(timeout=30)
        raise
    return Stack(base_url, env, logs, api, worker=early, started_workers=1 if early is not None else 0)


@dataclass
class TriageStack:
    """A stack whose API and worker read our TORCH_HOME, with its own broker database."""

    stack: Stack
    torch_home: Path
    http: httpx.Client


TRIAGE_UPLOAD_LIMIT = 16 * 1024 * 1024  # admits the LeNet5 programs


def start_triage_stack(settings: Settings, redis_server: str, folder: Path) -> TriageStack:
    """torchvision weights cannot be downloaded here, so tests place seeded random-init state_dicts under
    the weights enums' file names in this TORCH_HOME; the API (which hashes them to find runs) and the
    worker (which scores them) must both read it. Redis database 9 is its broker, so that the session's
    other stack never takes these jobs."""
    torch_home = folder / "torch"
    own = settings.model_copy(
        update={"broker_url": f"{redis_server}/9", "upload_limit_bytes": TRIAGE_UPLOAD_LIMIT}
    )
    logs = folder / "logs"
    logs.mkdir()
    # Two warm children, as the session's stack (stacks/conftest.py: stack): test_triage_stack.py and
    # test_cli_client.py 47.4 s -> 43.0 s.
    stack = start_stack(
        own, logs, TORCH_HOME=str(torch_home), ZOOTRIAGE_BROKER_VISIBILITY_TIMEOUT_S="60",
        ZOOTRIAGE_WARM_CHILDREN="2",
    )
    return TriageStack(stack, torch_home, httpx.Client(base_url=stack.base_url, timeout=120))
