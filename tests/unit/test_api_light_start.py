"""The API process starts without torch, timm, torchvision, numpy, scipy, scikit-learn or matplotlib:
it checks and labels requests from the published catalogues (``core.catalogue``), and the requests
that compute (decisions, back-tests, plots) import what they need when they are asked.

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
    study = client.get("/backtests/study")
print(json.dumps({{
    "started": started,
    "pairs": [pairs.status_code, [item["architecture"] for item in pairs.json()["items"]]],
    "after_list": after_list,
    "study": [study.status_code, "The evidence" in study.text],
    "after_study": sorted({{name.split(".")[0] for name in heavy()}}),
}}))
"""


def _probe(tmp_path: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "ZOOTRIAGE_STATE_DIR": str(tmp_path),
        "HF_HUB_OFFLINE": "1",
    }
    for name in ("ZOOTRIAGE_DATABASE_URL", "ZOOTRIAGE_BROKER_URL", "ZOOTRIAGE_HOST"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
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
    # The study page computes with the back-test service: it works, and only then are numpy and
    # scipy loaded.
    assert found["study"] == [200, True]
    assert {"numpy", "scipy"} <= set(found["after_study"])
