"""Text that came from outside (an upload's metadata, a sandboxed child's report, a form) checked or
cleaned before it is stored or shown: no Unicode control or format character (categories ``Cc`` and
``Cf``: NUL, which PostgreSQL cannot store; ESC and the C1 controls, which a terminal showing the text
would obey; bidirectional overrides, which make it read otherwise than it is), except the line breaks
and tabs a caller allows."""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator

REPLACEMENT = "\ufffd"


def controls(text: str, allowed: str = "") -> list[str]:
    """The control and format characters of ``text`` that are not in ``allowed``, in order."""
    return [c for c in text if unicodedata.category(c) in ("Cc", "Cf") and c not in allowed]


def cleaned(text: str, allowed: str = "\n\t") -> str:
    """``text`` with each control or format character not in ``allowed`` replaced by U+FFFD."""
    if not controls(text, allowed):
        return text
    return "".join(REPLACEMENT if unicodedata.category(c) in ("Cc", "Cf") and c not in allowed else c
                   for c in text)


def _plain(text: str) -> str:
    if controls(text):
        raise ValueError("holds a control or format character")
    return text


# A pydantic string type for one-line text from outside: refused when it holds any control or format
# character (a line break included).
PlainText = Annotated[str, AfterValidator(_plain)]
