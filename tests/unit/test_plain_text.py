"""``core.plain_text``: the control and format characters of outside text found and replaced, and the
public message of a failed job (``worker.messages``), which carries a sandboxed child's words."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from zootriage.core.plain_text import REPLACEMENT, PlainText, cleaned, controls
from zootriage.worker.messages import MAX_CHARS, public_message

HOSTILE = ("nul\x00", "esc\x1b[2J", "c1\x9b31m", "bidi\u202eevil", "bell\x07", "zero\u200bwidth")
PLAIN = ("ResNet-50 (v2)", "café naïve", "emoji \U0001f638", "Ω≈ç√", "tab\tand space")


@pytest.mark.parametrize("text", HOSTILE)
def test_every_control_or_format_character_is_found_and_replaced(text: str) -> None:
    found = controls(text)
    assert len(found) == 1 and found[0] in text
    assert cleaned(text) == text.replace(found[0], REPLACEMENT)


@pytest.mark.parametrize("text", PLAIN)
def test_plain_text_is_left_as_it_is(text: str) -> None:
    assert controls(text, allowed="\t") == [] and cleaned(text) == text


def test_line_breaks_are_kept_only_where_allowed() -> None:
    assert cleaned("a\nb\tc") == "a\nb\tc"
    assert cleaned("a\nb", allowed="") == f"a{REPLACEMENT}b"


def test_the_pydantic_type_refuses_what_it_would_replace() -> None:
    class Named(BaseModel):
        name: PlainText

    assert Named(name=PLAIN[1]).name == PLAIN[1]
    for text in (*HOSTILE, "two\nlines"):
        with pytest.raises(ValidationError, match="control or format character"):
            Named(name=text)


def test_a_failed_jobs_message_is_one_plain_bounded_line_without_paths() -> None:
    text = "\n  bad\x00 file /srv/zootriage/uploads/abc.pt\x1b]0;owned\x07 here\nTraceback (most recent call)"
    assert public_message(text) == f"bad{REPLACEMENT} file abc.pt{REPLACEMENT}]0;owned{REPLACEMENT} here"
    long = public_message("x" * (MAX_CHARS + 50))
    assert len(long) == MAX_CHARS and long.endswith("…")
