"""What a failed job may tell its readers: the code, one line about the input, never the machine.

Job rows are readable without a key, so an error message must not carry a traceback, an install or
upload path, or a multi-line dump of some library's state. The full exception goes to the worker
log (with the job id, to grep); the row keeps the first line with every absolute path cut down to
its last component, bounded in length.
"""

from __future__ import annotations

import re

from zootriage.core.plain_text import cleaned

MAX_CHARS = 500
# An absolute POSIX path of two or more components, e.g. /usr/lib/python3/site-packages/torch/x.py;
# the lookbehind keeps URLs and relative paths (a dataset's own sub-folder) as they are.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~-])/(?:[^\s/'\":,;()]+/)+([^\s/'\":,;()]+)")


def public_message(text: str) -> str:
    """The first non-blank line, absolute paths cut, control characters replaced (a sandboxed child's
    message may hold a NUL, which the database cannot store, or a terminal escape), bounded."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    line = cleaned(line, allowed="\t")
    line = _ABSOLUTE_PATH.sub(r"\1", line)
    return line if len(line) <= MAX_CHARS else line[: MAX_CHARS - 1] + "…"


def internal_error_message(job_id: str) -> str:
    """The message of a job that failed on a bug: nothing about the bug, how to find it."""
    return f"an internal error stopped this job; the worker log has the details under job {job_id}"
