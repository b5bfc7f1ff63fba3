"""One import name per module: the code lives in ``src/zootriage`` (real folders, no links), so a module
can only be ``zootriage.<...>``. A second name (``core.errors`` beside ``zootriage.core.errors``) would
load a module twice: two registries of markers, two ``ZooError`` classes that ``except`` tells apart.

The check imports every module in a fresh interpreter started at the repository root (its folder on
``sys.path``, as pytest and ``python -c`` put it) and asserts that each source file is loaded under
exactly one name, and that no bare top-level name reaches our code."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "zootriage"
BARE = {"core", "app", "worker", "src"}

PROBE = """
import importlib, importlib.util, json, pkgutil, sys
import zootriage
for info in pkgutil.walk_packages(zootriage.__path__, "zootriage."):
    if ".migrations" not in info.name:
        importlib.import_module(info.name)
files = {}
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if path:
        files.setdefault(path, []).append(name)
bare = {n: getattr(importlib.util.find_spec(n), "origin", None) for n in ("core", "app", "worker")}
print(json.dumps({"root": zootriage.__file__, "files": files, "bare": bare}))
"""


def _bare_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in BARE]
    return found


def test_nothing_imports_a_bare_or_src_prefixed_name() -> None:
    files = [p for top in ("src", "tests", "benchmarks") for p in (ROOT / top).rglob("*.py")]
    assert len(files) > 200
    assert [hit for path in files for hit in _bare_imports(path)] == []


def test_the_code_lives_in_real_folders_under_src() -> None:
    for name in ("core", "app", "worker"):
        assert (SRC / name).is_dir() and not (SRC / name).is_symlink()
        assert not (ROOT / name).exists(), f"a top-level {name}/ would be importable as {name!r}"
    assert not (ROOT / "zootriage").exists()
    assert [p for p in SRC.rglob("*") if p.is_symlink()] == []


def test_every_module_is_loaded_under_exactly_one_name() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=600, check=True
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(seen["root"]).resolve().is_relative_to(SRC)
    ours = {Path(path).resolve(): names for path, names in seen["files"].items()
            if Path(path).resolve().is_relative_to(SRC)}
    assert len(ours) > 200  # every module was imported
    twice = {str(path): names for path, names in ours.items() if len(names) != 1}
    assert twice == {}
    assert all(names[0].startswith("zootriage.") or names[0] == "zootriage" for names in ours.values())
    assert seen["bare"] == {"core": None, "app": None, "worker": None}
