"""CSV cells: user text that a spreadsheet would run as a formula is written as text."""

from __future__ import annotations

import csv
import io

import pytest

from zootriage.app.csv_cells import csv_writer, safe_cell


@pytest.mark.parametrize("text", ["=1+1", "+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", '=HYPERLINK("http://x")'])
def test_formula_text_gets_a_leading_quote(text: str) -> None:
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["resnet18", "a=b", "", " =1", -0.5, 3, None])
def test_other_cells_are_unchanged(value: object) -> None:
    assert safe_cell(value) == value


def test_the_writer_quotes_text_and_keeps_numbers() -> None:
    out = io.StringIO()
    csv_writer(out).writerow(["=cmd|' /C calc'!A0", -0.25, "team=a,b"])
    assert next(csv.reader(io.StringIO(out.getvalue()))) == ["'=cmd|' /C calc'!A0", "-0.25", "team=a,b"]
