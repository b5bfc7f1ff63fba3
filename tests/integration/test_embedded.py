"""The embedded default (``make run``): SQLite and the filesystem broker, same API and worker code."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.stack import free_port

pytestmark = pytest.mark.slow  # the embedded service started and a job scored


def test_the_embedded_service_scores_a_job(tmp_path: Path, mnist_program: Path) -> None:
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("ZOOTRIAGE_")} | {
        "ZOOTRIAGE_STATE_DIR": str(tmp_path / "var"),
        "ZOOTRIAGE_PORT": str(port),
        "HF_HUB_OFFLINE": "1",
    }
    log = open(tmp_path / "embedded.log", "wb")  # noqa: SIM115
    service = subprocess.Popen(
        [sys.executable, "-m", "zootriage.app.embedded"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=60) as http:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if http.get("/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert service.poll() is None and time.monotonic() < deadline, (
                    tmp_path / "embedded.log"
                ).read_text()
                time.sleep(0.3)
            assert f"http://127.0.0.1:{port}" in (tmp_path / "embedded.log").read_text()
            upload = http.post("/v1/checkpoints", files={"file": ("m.pt2", mnist_program.read_bytes())})
            model = {"source": "checkpoint", "path": upload.json()["model_path"]}
            body = {
                "model": model,
                "dataset": {"source": "builtin", "name": "digits"},
                "sampling": {"per_class": 10},
                "protocol": {"n_t": 50},
            }
            posted = http.post("/v1/jobs", json=body)
            assert posted.status_code == 202, posted.text
            while (job := http.get(posted.headers["location"]).json())["status"] in ("queued", "running"):
                assert time.monotonic() < deadline + 240, job
                time.sleep(0.2)
            assert job["status"] == "succeeded", job
            assert (tmp_path / "var" / "zootriage.db").is_file()
            assert http.post("/v1/jobs", json=body).status_code == 200
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=60)
    leftover = subprocess.run(
        ["pgrep", "-s", str(service.pid)], capture_output=True, text=True
    ).stdout.split()
    assert leftover == []  # the worker went down with the API
