"""The embedded default (``make run``): API and worker on one machine with no servers to install.

SQLite and Celery's filesystem broker stand in for PostgreSQL and Redis; the worker is the same
Celery task code in its own process, only the URLs differ. ``ZOOTRIAGE_*`` variables still apply,
so pointing this at PostgreSQL and Redis works too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import uvicorn

from zootriage.app.main import create_app
from zootriage.app.migrate import upgrade_to_head
from zootriage.app.settings import Settings, get_settings


def worker_command(loglevel: str = "WARNING") -> list[str]:
    app = "zootriage.worker.celery_app"
    return [sys.executable, "-m", "celery", "-A", app, "worker", f"--loglevel={loglevel}"]


def run_embedded(settings: Settings) -> None:
    """Serve on ``settings.host``/``port`` (loopback by default, where the access policy is open)."""
    host, port = settings.host, settings.port
    upgrade_to_head(settings.effective_database_url)
    # The worker owns torch/CUDA in its own process; HF_HUB_OFFLINE keeps a missing timm file a fast error.
    env = {"HF_HUB_OFFLINE": "1", **os.environ}
    worker = subprocess.Popen(worker_command(), env=env)
    # uvicorn re-raises the SIGTERM it caught once it has shut down; exiting through SystemExit (not
    # the default handler's immediate death) lets the ``finally`` below stop the worker too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"zootriage is running at http://{host}:{port}  (API docs: http://{host}:{port}/docs)", flush=True)
    try:
        uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()


if __name__ == "__main__":
    run_embedded(get_settings())
