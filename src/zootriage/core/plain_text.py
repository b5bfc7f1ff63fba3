"""Text that came from outside (an upload's metadata, a sandboxed child's report, a form, a service
answer the command line prints) checked or cleaned before it is stored or shown: no Unicode control
or format character (categories ``Cc`` and ``Cf``: NUL, which PostgreSQL cannot store; ESC and the C1
controls, which a terminal showing the text would obey; bidirectional overrides, which make it read
otherwise than it is) and no lone surrogate (``Cs``: neither UTF-8 nor PostgreSQL can hold one),
except the line breaks and tabs a caller allows and the zero-width joiners (``JOINERS``). The one
place that decides which characters those are; the command line shows each as its escape
(``app.cli.terminal_text``), the service refuses or replaces it."""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator

REPLACEMENT = "\ufffd"
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})  # control, format, lone surrogate
# Format characters that change no terminal state and no direction, and that emoji sequences and
# Persian and Indic spelling need: the zero-width non-joiner and joiner.
JOINERS = frozenset("\u200c\u200d")


def unsafe(char: str, allowed: str = "") -> bool:
    """Whether ``char`` is a control, format or lone-surrogate character (not a joiner, not in
    ``allowed``)."""
    return char not in allowed and char not in JOINERS and unicodedata.category(char) in UNSAFE_CATEGORIES


def controls(text: str, allowed: str = "") -> list[str]:
    """The unsafe characters of ``text`` that are not in ``allowed``, in order."""
    return [c for c in text if unsafe(c, allowed)]


def cleaned(text: str, allowed: str = "\n\t") -> str:
    """``text`` with each unsafe character not in ``allowed`` replaced by U+FFFD."""
    if not controls(text, allowed):
        return text
    return "".join(REPLACEMENT if unsafe(c, allowed) else c for c in text)


def _plain(text: str) -> str:
    if controls(text):
        raise ValueError("holds a control or format character")
    return text


# A pydantic string type for one-line text from outside: refused when it holds any control or format
# character (a line break included).
PlainText = Annotated[str, AfterValidator(_plain)]
