"""A run's description (``app.labels.check_description``) and what a triage answer says of an archived
run it used (``app.services.triage.archived_note``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from zootriage.app.db.models import Run
from zootriage.app.labels import DESCRIPTION_CHARS, BadLabel, check_description
from zootriage.app.services.triage import archived_note

PASSING = ["x", "two\nlines", "tab\there", "crlf\r\nkept", "ü ∂ 漢字", "y" * DESCRIPTION_CHARS]


@pytest.mark.parametrize("text", PASSING)
def test_descriptions_that_pass(text: str) -> None:
    assert check_description(text) == text


@pytest.mark.parametrize(
    ("text", "says"),
    [("", "1 to"), ("y" * (DESCRIPTION_CHARS + 1), "1 to"), (" \n\t", "blank"), ("nul\x00", "printable"),
     ("esc\x1b[31m", "printable")],
)
def test_descriptions_that_fail(text: str, says: str) -> None:
    with pytest.raises(BadLabel, match=says):
        check_description(text)


def test_an_archived_run_is_named_in_the_answer_that_used_it() -> None:
    run = Run(id=uuid.UUID(int=5), archived_at=None)
    assert archived_note(run) == []
    run.archived_at = datetime(2026, 12, 4, 10, 30, tzinfo=UTC)
    [note] = archived_note(run)
    assert note == f"run {run.id} is archived (since 2026-12-04 10:30 UTC); it still answers here"
