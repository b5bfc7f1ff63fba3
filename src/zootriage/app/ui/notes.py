"""A note that several markers share is stated once, above their table, and each of their rows points
to it: a run scored with a small protocol has the same long reason ("no noise estimate: draws-only
noise …") on thirty rows, which buried the one row whose note differs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Notes:
    """``shared``: (number, text, how many markers) for each note two markers or more share, numbered
    from 1 in the order of their first row; ``cells``: each marker's own note, or the number of the
    shared note it points to."""

    shared: list[tuple[int, str, int]]
    cells: dict[str, str | int]


def shared_notes(markers: Iterable[Any]) -> Notes:
    """The notes (``reason``) of ``markers`` (objects with ``name`` and ``reason``)."""
    listed = [(m.name, m.reason) for m in markers if m.reason]
    counts = Counter(reason for _, reason in listed)
    numbers = {reason: i for i, reason in enumerate([r for r, c in counts.items() if c > 1], start=1)}
    shared = [(number, reason, counts[reason]) for reason, number in numbers.items()]
    return Notes(shared, {name: numbers.get(reason, reason) for name, reason in listed})
