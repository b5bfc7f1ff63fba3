"""The database layer loads without torch: migrations and the API's light paths import it, and the
import contracts cannot see a package ``__init__`` pulled in by a submodule import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_database_models_and_the_protocol_import_no_torch() -> None:
    probe = (
        "import sys, zootriage.app.db.models, zootriage.app.db.session, zootriage.core.protocol; "
        "heavy = ('torch', 'fastapi', 'zootriage.core.zoo', 'zootriage.core.data'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
