"""The command line's exit statuses, one definition for every command: 0 is success, 1 a gate that
failed (``client``), and ``BAD_INPUT`` a usage error or input the command refused, with its message on
stderr — never a traceback."""

from __future__ import annotations

BAD_INPUT = 2
