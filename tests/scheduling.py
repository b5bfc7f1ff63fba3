"""How ``make test`` (``--dist loadfile``) hands the suite to its xdist processes: by module, except that
every module under ``tests/integration/stacks/`` goes, as one unit, to one process.

Those modules share the session's running stacks (``stack``, ``triage_stack``, ``api_only_stack``:
fixtures of that folder only). A session fixture is made once per process, so with the modules spread
over both processes each stack started twice: an API, a worker importing torch and its two warm
children, about 20 s of CPU each time (docs/test_suite.md) on a run that the machine's CPU bounds. One unit,
one start.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

SHARED_STACKS = "tests/integration/stacks/"


def scope_of(nodeid: str) -> str:
    """The unit a test is handed out in: ``SHARED_STACKS`` for the tests under it, else its module."""
    if nodeid.startswith(SHARED_STACKS):
        return SHARED_STACKS
    return nodeid.split("::", 1)[0]


class SharedStacksScheduling(LoadFileScheduling):
    """xdist's ``loadfile`` scheduling with ``scope_of`` as its unit."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)
