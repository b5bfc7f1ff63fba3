"""One import name: the repository keeps core/, app/ and worker/ at its top, and zootriage/ names them
``zootriage.core``, ``.app`` and ``.worker`` (symlinks). Code that imported the bare names would load
every module twice under two names in a checkout and fail in an installed wheel, which ships only
``zootriage``: nothing may."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BARE = {"core", "app", "worker"}


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


def test_nothing_imports_the_bare_package_names() -> None:
    files = [
        p for top in ("core", "app", "worker", "tests", "benchmarks") for p in (ROOT / top).rglob("*.py")
    ]
    assert len(files) > 200
    assert [hit for path in files for hit in _bare_imports(path)] == []


def test_the_namespace_links_point_at_the_top_folders() -> None:
    for name in sorted(BARE):
        link = ROOT / "zootriage" / name
        assert link.is_symlink() and link.resolve() == (ROOT / name).resolve()
