"""The distribution as users install it, not the checkout: the wheel is built from the files the
Dockerfile copies, installed non-editably into fresh virtual environments, and run from a folder
outside the repository (no ``PYTHONPATH``), so everything it needs must be inside the wheel.

- the wheel, installed for a server, migrates a throw-away PostgreSQL database with the migrations
  shipped as package data and serves (``/healthz`` and ``/readyz`` 200). It is installed with
  ``--no-deps`` and finds its dependencies in the test environment's site-packages (added after its
  own, so every zootriage module comes from the wheel): a real ``[server]`` install pulls ~6 GB of
  CUDA torch and takes minutes, which the Docker build pays, not the test suite;
- the base install is the client alone (httpx, typer, rich, pydantic: no torch, no numpy) and runs a
  real ``zootriage gate`` against the test stack. Its install time and size are printed (``-s``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text

from tests.integration.cli import SCORING
from tests.integration.databases import scratch_database
from tests.integration.stack import TriageStack, free_port
from zootriage.app.migrate import alembic_config

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[3]
# What the Dockerfile's first stage copies:
SHIPPED = ("pyproject.toml", "README.md", "src")


def outside_env(**extra: str) -> dict[str, str]:
    """This environment without anything that would import the checkout or configure the service."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("ZOOTRIAGE_")}
    return {**env, **extra}


def run(argv: list[str | Path], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=outside_env(**extra), capture_output=True,
                          text=True, timeout=1200, check=False)
    assert done.returncode == 0, f"{argv}: {done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in SHIPPED:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", dist, source],
        cwd=source)
    (built,) = dist.glob("zootriage-*.whl")
    return built


@pytest.fixture
def venv(tmp_path: Path) -> Iterator[Path]:
    """A fresh virtual environment (removed afterwards: the server's is several GB)."""
    folder = tmp_path / "venv"
    run([sys.executable, "-m", "venv", folder], cwd=tmp_path)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def install(venv: Path, requirement: str, *options: str) -> float:
    start = time.perf_counter()
    run([venv / "bin" / "pip", "install", "-q", "--disable-pip-version-check", *options, requirement],
        cwd=venv.parent)
    return time.perf_counter() - start


def borrow_dependencies(venv: Path) -> None:
    """Put this environment's site-packages on ``venv``'s path after its own (a ``.pth`` line adds the
    folder but runs none of its own ``.pth`` files, so the checkout's editable install stays off)."""
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")


def size_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


def imported_from(venv: Path, *modules: str) -> dict[str, str]:
    """Where each module comes from in ``venv`` ('-' when it is not installed)."""
    script = (
        "import importlib.util, sys\n"
        "for m in sys.argv[1:]:\n"
        "    spec = importlib.util.find_spec(m)\n"
        "    print(m, spec.origin if spec else '-')\n"
    )
    done = run([venv / "bin" / "python", "-c", script, *modules], cwd=venv.parent)
    return dict(line.split(" ", 1) for line in done.stdout.splitlines())


def test_the_wheel_with_server_extras_migrates_and_serves(
    wheel: Path, venv: Path, redis_server: str, tmp_path: Path
) -> None:
    install(venv, str(wheel), "--no-deps")
    borrow_dependencies(venv)
    ours = ("zootriage.app.migrate", "zootriage.core.glue", "zootriage.worker.tasks")
    found = imported_from(venv, *ours, "tests", "fastapi", "core", "app")
    assert all(found[m].startswith(str(venv)) for m in ours)
    assert found["core"] == found["app"] == "-"  # no generic top-level names
    assert found["tests"] == "-" and found["fastapi"] != "-"

    with scratch_database() as url:
        service = {
            "ZOOTRIAGE_DATABASE_URL": url,
            "ZOOTRIAGE_BROKER_URL": f"{redis_server}/5",
            "ZOOTRIAGE_STATE_DIR": str(tmp_path / "state"),
            "ZOOTRIAGE_DATA_ROOTS": str(tmp_path),
            "ZOOTRIAGE_PORT": str(free_port()),
        }
        run([venv / "bin" / "zootriage", "migrate"], cwd=tmp_path, **service)
        head = ScriptDirectory.from_config(alembic_config(url)).get_current_head()
        engine = create_engine(url)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == head
        engine.dispose()

        log = (tmp_path / "serve.log").open("wb")
        api = subprocess.Popen(
            [venv / "bin" / "zootriage", "serve"], cwd=tmp_path, env=outside_env(**service), stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            base = f"http://127.0.0.1:{service['ZOOTRIAGE_PORT']}"
            answers: dict[str, int] = {}
            for _ in range(600):  # up to a minute for imports and start-up; it exits on any error
                if api.poll() is not None:
                    break
                try:
                    answers = {p: httpx.get(base + p, timeout=5).status_code for p in ("/healthz", "/readyz")}
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            assert answers == {"/healthz": 200, "/readyz": 200}, (tmp_path / "serve.log").read_text()[-3000:]
        finally:
            api.terminate()
            api.wait(timeout=30)
            log.close()


def test_the_client_alone_installs_light_and_gates_against_the_stack(
    wheel: Path,
    venv: Path,
    triage_stack: TriageStack,
    digit_programs: dict[str, Path],
    tmp_path: Path,
) -> None:
    seconds = install(venv, str(wheel))
    print(f"\nclient-only install: {seconds:.1f} s, venv {size_mib(venv):.0f} MiB")
    found = imported_from(venv, "httpx", "typer", "torch", "numpy", "sqlalchemy", "fastapi")
    assert found["httpx"] != "-" and found["typer"] != "-"
    assert [m for m in ("torch", "numpy", "sqlalchemy", "fastapi") if found[m] != "-"] == []

    gate = subprocess.run(
        [str(venv / "bin" / "zootriage"), "gate", "--candidate", f"ckpt:{digit_programs['advtrained']}",
         "--baseline", f"ckpt:{digit_programs['clntrained']}", "--rule", "dimension: max 1000", *SCORING],
        cwd=tmp_path, env=outside_env(ZOOTRIAGE_URL=triage_stack.stack.base_url, COLUMNS="200"),
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert gate.returncode == 0, gate.stderr
    assert "PASSED" in gate.stdout and "lenet5_advtrained.pt2 against lenet5_clntrained.pt2" in gate.stdout

    local = subprocess.run(
        [str(venv / "bin" / "zootriage"), "score", "--model", "tv:resnet18", "--dataset", "builtin:mnist"],
        cwd=tmp_path, env=outside_env(), capture_output=True, text=True, timeout=120, check=False,
    )
    assert local.returncode == 2 and "pip install 'zootriage[worker]'" in local.stderr, local.stderr
    assert "Traceback" not in local.stderr
