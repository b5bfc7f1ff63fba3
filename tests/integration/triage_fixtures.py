"""A real stack for the triage tests: uvicorn and a Celery worker that see a TORCH_HOME of ours.

torchvision weights cannot be downloaded here, so seeded random-init state_dicts are placed under the
weights enums' file names in that TORCH_HOME, and the API (which hashes them to find runs) and the
worker (which scores them) must both read it. The stack gets its own Redis database as broker, so the
session's other stack never takes these jobs, and an upload limit that admits the LeNet5 programs.

Two test modules use it; the first to ask starts it and the last to finish stops it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
import torchvision

from tests.integration.stack import Stack, start_stack
from zootriage.app.settings import Settings

TERMINAL = {"succeeded", "failed", "cancelled"}
UPLOAD_LIMIT = 16 * 1024 * 1024


@dataclass
class TriageStack:
    stack: Stack
    torch_home: Path
    http: httpx.Client


_shared: dict[str, Any] = {"users": 0, "value": None}


def _start(settings: Settings, redis_server: str, folder: Path) -> TriageStack:
    broker = f"{redis_server}/9"
    torch_home = folder / "torch"
    own = settings.model_copy(update={"broker_url": broker, "upload_limit_bytes": UPLOAD_LIMIT})
    logs = folder / "logs"
    logs.mkdir()
    stack = start_stack(own, logs, TORCH_HOME=str(torch_home), ZOOTRIAGE_BROKER_VISIBILITY_TIMEOUT_S="60")
    return TriageStack(stack, torch_home, httpx.Client(base_url=stack.base_url, timeout=120))


@pytest.fixture(scope="session")
def triage_stack(
    settings: Settings, redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TriageStack]:
    if _shared["value"] is None:
        _shared["value"] = _start(settings, redis_server, tmp_path_factory.mktemp("triage"))
    _shared["users"] += 1
    yield _shared["value"]
    _shared["users"] -= 1
    if _shared["users"] == 0:
        _shared["value"].stack.stop()
        _shared["value"] = None


def place_torchvision_weights(torch_home: Path, arch: str, weights: str, seed: int) -> Path:
    """A seeded random-init state_dict under the enum's expected file name, as the zoo tests do."""
    enum = torchvision.models.get_model_weights(arch)[weights]
    folder = torch_home / "hub" / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    path = folder / Path(enum.url).name
    torch.save(torchvision.models.get_model(arch, num_classes=1000).state_dict(), path)
    return path


def upload(http: httpx.Client, path: Path) -> str:
    answer = http.post("/v1/checkpoints", files={"file": (path.name, path.read_bytes())})
    assert answer.status_code in (200, 201), answer.text  # 200: these bytes under this name already
    return str(answer.json()["model_path"])


def wait_for_jobs(
    http: httpx.Client, jobs: list[dict[str, Any]], timeout: float = 300
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [http.get(f"/v1/jobs/{job['id']}").json() for job in jobs]
        if all(state["status"] in TERMINAL for state in states):
            return states
        time.sleep(0.2)
    raise AssertionError(f"jobs did not finish: {[job['id'] for job in jobs]}")
