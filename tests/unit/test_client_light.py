"""The command-line client stays light: its commands parse references and talk HTTP without importing
torch, numpy, timm or the server's packages, so it installs and starts with httpx/typer/rich/pydantic.

Each check runs in a fresh interpreter, since this test process has long imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["torch", "numpy", "timm", "scipy", "torchvision", "sqlalchemy", "fastapi", "celery", "alembic"]
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens, the client must say so

PROBE = """
import json, sys
from typer.testing import CliRunner
from zootriage.app.cli import app
result = CliRunner().invoke(app, sys.argv[1:])
print(json.dumps({"code": result.exit_code, "output": result.output,
                  "heavy": [m for m in HEAVY if m in sys.modules]}))
"""


def run_client(*args: str) -> dict[str, object]:
    script = f"HEAVY = {HEAVY!r}\n{PROBE}"
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"},
    )
    answer: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["gate", "--help"],
        ["score", "--help"],
        [
            "gate", "--candidate", "timm:resnet50.a1_in1k", "--baseline", "tv:resnet18.IMAGENET1K_V1",
            "--rule", "dimension: max_relative_drop 0.05", "--dataset", "folder:imagenet/val",
            "--url", UNREACHABLE,
        ],
        ["rank", "tv:resnet18@w.pth", "ckpt:net.pt2", "--dataset", "builtin:mnist", "--url", UNREACHABLE],
        ["submit", "tv:resnet18", "--dataset", "torchvision:CIFAR10:cifar", "--url", UNREACHABLE],
        ["history", "--url", UNREACHABLE],
        ["sweep", "start", "ckpt:net.pt2", "--dataset", "builtin:mnist", "--url", UNREACHABLE],
        ["sweep", "list", "--url", UNREACHABLE],
        ["download", "0123abcd", "--features", "-o", "f.safetensors", "--url", UNREACHABLE],
    ],
    ids=[
        "root-help", "gate-help", "score-help", "gate", "rank", "submit", "history", "sweep-start",
        "sweep-list", "download",
    ],
)
def test_client_commands_import_nothing_heavy(args: list[str]) -> None:
    answer = run_client(*args)
    assert answer["heavy"] == []
    if "--url" in args:  # parsed everything, then failed to connect: exit 2 with one line
        assert answer["code"] == 2 and "cannot reach the service" in str(answer["output"])


def test_a_bad_reference_is_refused_by_the_client_itself() -> None:
    """The light parser is the full grammar: a bad reference never reaches the network."""
    answer = run_client("submit", "tv:resnet18@", "--dataset", "builtin:mnist", "--url", UNREACHABLE)
    assert answer["code"] == 2 and "bad_reference" in str(answer["output"])
    assert answer["heavy"] == []


def test_the_packages_still_offer_their_loaders_on_first_use() -> None:
    import zootriage.core.data
    import zootriage.core.zoo

    assert callable(zootriage.core.zoo.load_model) and callable(zootriage.core.zoo.v1_v2_pairs)
    assert callable(zootriage.core.data.open_dataset) and callable(zootriage.core.data.sample)
    with pytest.raises(AttributeError):
        zootriage.core.zoo.no_such_name  # noqa: B018
