"""Tables that fit the terminal: columns in order of importance, the least important left out first.

rich shrinks and wraps columns that do not fit, which keeps every column but can fold a number over
three lines. Here each column declares the narrowest it can usefully be (``min_width``) and a
``priority``; columns are kept, most important first, for as long as their minimum widths plus rich's cell
padding and borders (3 characters a column) fit ``width``; the rest are named in a caption so the
reader knows to widen the terminal or ask for ``--json``. What is kept may still wrap (labels, tags).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table

CELL_OVERHEAD = 3  # one padding space either side and a border


@dataclass(frozen=True)
class Column:
    header: str
    min_width: int
    priority: int = 0  # higher is kept longer
    justify: str = "left"
    no_wrap: bool = False


def kept(columns: Sequence[Column], width: int) -> list[int]:
    """Indices of the columns that fit ``width``, in their original order (the first always stays)."""
    order = sorted(range(len(columns)), key=lambda i: (-columns[i].priority, i))
    chosen: list[int] = []
    used = 1  # the table's left border
    for i in order:
        need = columns[i].min_width + CELL_OVERHEAD
        if chosen and used + need > width:
            break  # strictly by importance: a less important narrow column never displaces this one
        chosen.append(i)
        used += need
    return sorted(chosen)


def fitted_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> Table:
    """A rich table of the columns that fit ``width``; dropped ones are named in the caption."""
    keep = kept(columns, width)
    table = Table()
    for i in keep:
        column = columns[i]
        table.add_column(
            column.header, min_width=column.min_width, justify=column.justify,  # type: ignore[arg-type]
            no_wrap=column.no_wrap,
        )
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    dropped = [columns[i].header for i in range(len(columns)) if i not in keep]
    if dropped:
        table.caption = f"not shown at this width: {', '.join(dropped)} (widen the terminal or use --json)"
    return table
