"""Tables that fit the terminal: the least important columns go first, the rest keep their order."""

from __future__ import annotations

from rich.console import Console

from zootriage.app.cli.tables import CELL_OVERHEAD, Column, fitted_table, kept

COLUMNS = [
    Column("run", 36, priority=10),
    Column("created", 19, priority=4),
    Column("label", 12, priority=9),
    Column("tags", 8, priority=1),
    Column("dimension", 9, priority=8),
]


def width_of(indices: list[int]) -> int:
    return 1 + sum(COLUMNS[i].min_width + CELL_OVERHEAD for i in indices)


def test_everything_fits_a_wide_terminal() -> None:
    assert kept(COLUMNS, 200) == [0, 1, 2, 3, 4]


def test_a_narrow_terminal_keeps_the_most_important_in_their_order() -> None:
    narrow = width_of([0, 2, 4])
    assert kept(COLUMNS, narrow) == [0, 2, 4]
    assert kept(COLUMNS, narrow - 1) == [0, 2]


def test_the_first_column_stays_even_when_nothing_fits() -> None:
    assert kept(COLUMNS, 10) == [0]


def test_the_caption_names_what_was_left_out_and_the_table_fits() -> None:
    rows = [["0" * 36, "2026-12-01 17:00:00", "a label", "team=vision", "1.234"]]
    table = fitted_table(COLUMNS, rows, 70)
    console = Console(width=70, record=True)
    console.print(table)
    text = console.export_text()
    assert "not shown at this width: created, tags" in text
    assert max(len(line) for line in text.splitlines()) <= 70
