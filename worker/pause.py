"""A test-only pause at a stage boundary, so fault tests can act "mid-job" on any hardware.

Off unless both ``ZOOTRIAGE_TEST_PAUSE_STAGE`` and ``ZOOTRIAGE_TEST_PAUSE_FILE`` are set in the
worker's environment: then a job entering that stage (its start already written to the row) waits
until the file exists. Tests start a worker with them, kill it or the database while it waits, and
create the file to let the next attempt through. Production never sets them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

POLL_S = 0.1


def pause_at(stage: str) -> None:
    wanted = os.environ.get("ZOOTRIAGE_TEST_PAUSE_STAGE")
    release = os.environ.get("ZOOTRIAGE_TEST_PAUSE_FILE")
    if not wanted or not release or stage != wanted:
        return
    while not Path(release).exists():
        time.sleep(POLL_S)
