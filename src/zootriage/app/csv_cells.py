"""CSV cells that a spreadsheet shows as text, never runs as a formula.

A run name, a tag or an architecture label is user text; a cell starting with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return is read by Excel, LibreOffice and Google Sheets as a formula (which
can fetch URLs or, through DDE, start programs on the machine of whoever opens the export). Such a
text cell gets a leading single quote, as OWASP's CSV-injection guidance recommends: spreadsheets hide
the quote and show the text. Numbers are left alone (a negative marker value stays a number). Every
CSV the service writes goes through ``csv_writer``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any, TextIO

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """``value``, with a quote in front when it is text a spreadsheet would take for a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeWriter:
    """``csv.writer`` whose rows pass through ``safe_cell``."""

    def __init__(self, out: TextIO) -> None:
        self._writer = csv.writer(out)

    def writerow(self, values: Iterable[Any]) -> None:
        self._writer.writerow([safe_cell(v) for v in values])


def csv_writer(out: TextIO) -> SafeWriter:
    return SafeWriter(out)
