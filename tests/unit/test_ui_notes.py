"""The run page's and report's notes: a note two markers share is listed once and numbered in the order
of its first row; a note of one marker stays in its row."""

from __future__ import annotations

from types import SimpleNamespace

from zootriage.app.ui.notes import shared_notes


def _marker(name: str, reason: str | None) -> SimpleNamespace:
    return SimpleNamespace(name=name, reason=reason)


def test_shared_notes_are_numbered_once_and_single_ones_stay_in_their_row() -> None:
    markers = [
        _marker("a", "degenerate"), _marker("b", "no noise estimate"), _marker("c", "no noise estimate"),
        _marker("d", None), _marker("e", "only mine"), _marker("f", "degenerate"), _marker("g", ""),
        _marker("h", "no noise estimate"),
    ]
    notes = shared_notes(markers)
    assert notes.shared == [(1, "degenerate", 2), (2, "no noise estimate", 3)]
    assert notes.cells == {"a": 1, "b": 2, "c": 2, "e": "only mine", "f": 1, "h": 2}


def test_no_shared_note_when_every_note_differs() -> None:
    notes = shared_notes([_marker("a", "x"), _marker("b", "y"), _marker("c", None)])
    assert notes.shared == [] and notes.cells == {"a": "x", "b": "y"}
