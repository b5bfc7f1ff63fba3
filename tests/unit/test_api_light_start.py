"""The API process starts without torch, timm, torchvision, numpy, scipy, scikit-learn or matplotlib:
it checks and labels requests from the published catalogues (``core.catalogue``), and the requests
that compute (decisions, back-tests, plots) import what they need when they are asked. Taking an upload
and queueing a job on it never imports torch: the file is hashed and checked statically, the dataset
checked without decoding an image.

The app is built as ``zootriage serve`` builds it (``zootriage.app.main:create_app``, uvicorn's
factory) in a fresh interpreter, on a fresh SQLite database, and started (its lifespan runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "timm", "torchvision", "numpy", "scipy", "sklearn", "matplotlib")

PROBE = f"""
import json, sys
HEAVY = {HEAVY!r}
def heavy():
    return sorted(name for name in sys.modules if name.split(".")[0] in HEAVY)
from zootriage.app.migrate import upgrade_to_head
from zootriage.app.settings import get_settings
upgrade_to_head(get_settings().effective_database_url)
from fastapi.testclient import TestClient
from zootriage.app.main import create_app
with TestClient(create_app()) as client:
    started = heavy()
    pairs = client.get("/v1/recommendations", params={{"dataset": "builtin:digits", "limit": 100}})
    after_list = heavy()
    with open(sys.argv[1], "rb") as weights:
        uploaded = client.post("/v1/checkpoints", files={{"file": ("resnet18.pt", weights.read())}})
    job = client.post("/v1/jobs", json={{
        "model": {{"source": "checkpoint", "path": uploaded.json().get("model_path"),
                   "library": "torchvision", "architecture": "resnet18"}},
        "dataset": {{"source": "builtin", "name": "digits"}},
        "sampling": {{"per_class": 10}},
    }})
    after_submit = heavy()
    study = client.get("/backtests/study")
print(json.dumps({{
    "started": started,
    "pairs": [pairs.status_code, [item["architecture"] for item in pairs.json()["items"]]],
    "after_list": after_list,
    "submitted": [uploaded.status_code, job.status_code, job.text[:300]],
    "after_submit": sorted({{name.split(".")[0] for name in after_submit}}),
    "study": [study.status_code, "The evidence" in study.text],
    "after_study": sorted({{name.split(".")[0] for name in heavy()}}),
}}))
"""


def _probe(tmp_path: Path) -> dict[str, Any]:
    import torch

    weights = tmp_path / "resnet18.pt"
    torch.save({"fc.weight": torch.zeros(10, 512), "fc.bias": torch.zeros(10)}, weights)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "ZOOTRIAGE_STATE_DIR": str(tmp_path),
        "HF_HUB_OFFLINE": "1",
    }
    for name in ("ZOOTRIAGE_DATABASE_URL", "ZOOTRIAGE_BROKER_URL", "ZOOTRIAGE_HOST"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(weights)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_the_api_starts_light_and_computes_on_request(tmp_path: Path) -> None:
    from zootriage.core.catalogue.torchvision import v1_v2_pairs

    found = _probe(tmp_path)
    assert found["started"] == [], "the API imported these at start"
    # The v1/v2 list comes from the catalogue: every pair, and still nothing heavy loaded.
    assert found["pairs"] == [200, sorted(pair.arch for pair in v1_v2_pairs())]
    assert len(found["pairs"][1]) == 24
    assert found["after_list"] == []
    # An upload and a job queued on it: accepted, and numpy (the builtin set's class draw) is all
    # they loaded.
    assert found["submitted"][:2] == [201, 202], found["submitted"]
    assert found["after_submit"] == ["numpy"]
    # The study page computes with the back-test service: it works, and only then are numpy and
    # scipy loaded.
    assert found["study"] == [200, True]
    assert {"numpy", "scipy"} <= set(found["after_study"])
