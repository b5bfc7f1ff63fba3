"""The marker registry's metadata as plain data (``markers.json``), for processes that label and
check marker names without computing any: the API, the pages, the triage rules.

``list_markers`` and ``get_marker`` answer as ``core.markers``' registry functions do (same order,
same error), with a ``MarkerInfo`` (everything in ``MarkerSpec`` but the function).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from zootriage.core.catalogue.files import load


@dataclass(frozen=True)
class MarkerInfo:
    """One registered marker's metadata. ``higher_is_better`` None: its sign is not a preference."""

    name: str
    group: str
    needs: frozenset[str]
    higher_is_better: bool | None
    description: str
    version: int

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> MarkerInfo:
        return cls(
            name=entry["name"],
            group=entry["group"],
            needs=frozenset(entry["needs"]),
            higher_is_better=entry["higher_is_better"],
            description=entry["description"],
            version=entry["version"],
        )

    def to_dict(self) -> dict[str, Any]:
        """The same JSON form as ``MarkerSpec.to_dict``."""
        return {
            "name": self.name,
            "group": self.group,
            "needs": sorted(self.needs),
            "higher_is_better": self.higher_is_better,
            "description": self.description,
            "version": self.version,
        }


@cache
def _markers() -> dict[str, MarkerInfo]:
    return {entry["name"]: MarkerInfo.from_dict(entry) for entry in load("markers")["markers"]}


def list_markers() -> list[MarkerInfo]:
    """Every registered marker, in the registry's order (by group, then by registration)."""
    return list(_markers().values())


def get_marker(name: str) -> MarkerInfo:
    """The marker registered under ``name``; ``ValueError`` listing the known names otherwise."""
    try:
        return _markers()[name]
    except KeyError:
        raise ValueError(f"unknown marker {name!r}; known markers: {sorted(_markers())}") from None


def glue_markers() -> tuple[str, ...]:
    """The fields of one GLUE analysis that are markers (``core.glue.MARKERS``)."""
    return tuple(load("markers")["glue_markers"])
