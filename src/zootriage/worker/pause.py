"""A test-only pause inside a stage, so fault tests can act "mid-job" on any hardware.

Off unless both ``ZOOTRIAGE_TEST_PAUSE_STAGE`` and ``ZOOTRIAGE_TEST_PAUSE_FILE`` are set in the
worker's environment. ``STAGE`` names where the job waits, after its progress is written to the row:

- ``markers``: on entering that stage;
- ``extract:mid``: at the first progress report of that stage with some items done (done > 0), so
  some batches are through (and at each later report while the file is still missing).

There it waits until the file exists. Tests kill the worker or the database, or cancel the job, while
it waits, and create the file to let the job (or its next attempt) through; a worker started with the
file already present never waits. Production never sets them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

POLL_S = 0.1


def pause_at(stage: str, done: int = 0, *, entering: bool = True) -> None:
    """Wait for the release file if ``stage`` (with ``done`` items, just entered or not) is the spot."""
    wanted = os.environ.get("ZOOTRIAGE_TEST_PAUSE_STAGE")
    release = os.environ.get("ZOOTRIAGE_TEST_PAUSE_FILE")
    if not wanted or not release:
        return
    name, _, moment = wanted.partition(":")
    if stage != name:
        return
    if (moment == "mid" and done <= 0) or (moment != "mid" and not entering):
        return
    while not Path(release).exists():
        time.sleep(POLL_S)
