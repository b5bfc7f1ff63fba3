"""Names a package exports but imports only when first used (PEP 562), so that importing the package
(for its light, pydantic-only parts: references, the protocol) loads no torch or numpy."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, heavy: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], object]:
    """The package's ``__getattr__``: ``heavy`` maps a name to the relative module that defines it; the
    first lookup imports that module and caches the name in the package's ``namespace``."""

    def __getattr__(name: str) -> object:
        if name not in heavy:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(heavy[name], package), name)
        namespace[name] = value
        return value

    return __getattr__
