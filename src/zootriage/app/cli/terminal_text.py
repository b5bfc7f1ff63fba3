"""Text from the service made safe to print on a terminal: ``terminal_safe``, ``escape`` and the
``TerminalConsole`` the client commands print through.

What the service answers is not all the service's own text: run names, architectures and tags come
from whoever submitted the job (a ``.pt2`` program's own ``zootriage.json`` names its architecture),
an error message can quote a file name from inside an uploaded dataset. A string such as ``"\\x1bc"``
(reset the terminal) or ``"\\x1b]0;title\\x07"`` (retitle the window) printed as it is acts on the
reader's terminal instead of being read. rich's ``escape`` only escapes markup and rich strips only BEL,
BS, VT, FF and CR, not ESC or the C1 controls (``\\x9b`` is a CSI of its own on many terminals). So
every control and format character (Unicode categories Cc and Cf: ESC, NUL, DEL, the C1 controls, the
bidi overrides and isolates such as U+202E that reorder what follows them, zero-width spaces, BOMs)
and every lone surrogate (Cs: ``"\\ud800"`` in JSON decodes to one, and writing it to stdout would
end the command with a traceback) is shown as its Python escape (``\\x1b``, ``\\u202e``), which names
what was there, instead of being left to act or hidden behind U+FFFD. Kept as they are: newline and
tab (ordinary text) and the zero-width joiner and non-joiner (U+200D, U+200C: format characters, but
part of emoji sequences and of Persian and Indic spelling; they change no terminal state or direction).

The client prints through ``escape`` wherever it puts service text into markup, and through
``TerminalConsole`` (its ``out`` and ``err``), which applies ``terminal_safe`` to every string it
renders, the ids and states it prints unescaped included. ``--json`` output is left as it is:
``json.dumps`` already writes every control character as ``\\uXXXX``.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.text import Text

from zootriage.core.plain_text import unsafe


def _shown(char: str) -> str:
    if not unsafe(char, allowed="\n\t"):  # which characters are unsafe: core.plain_text decides
        return char
    point = ord(char)
    return f"\\x{point:02x}" if point <= 0xFF else f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control, format and surrogate character but newline, tab and the zero-width
    (non-)joiner replaced by its escape, e.g. ``"\\x1b[2J"`` by the six characters ``\\x1b[2J``."""
    if text.isprintable():  # the usual case: no Cc, Cf or Cs at all (nor a newline or tab)
        return text
    return "".join(_shown(char) for char in text)


def escape(text: str) -> str:
    """Service text ready to go into rich markup: safe for the terminal (``terminal_safe``), then with
    its markup escaped (rich's ``escape``). Use it for every string the service sent."""
    return escape_markup(terminal_safe(text))


class TerminalConsole(Console):
    """A rich console that renders every string through ``terminal_safe`` first: a backstop for service
    text printed without ``escape`` (ids, states, marker names). Our own markup holds no control
    characters, so it renders as it would on a plain ``Console``."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(terminal_safe(text), **kwargs)
