"""``make test``'s units of work: the shared-stack modules as one, every other module alone."""

from __future__ import annotations

from tests.scheduling import SHARED_STACKS, scope_of


def test_the_modules_sharing_the_stacks_are_one_unit_and_every_other_module_its_own() -> None:
    stacks = [
        "tests/integration/stacks/test_stack.py::test_a_worker_killed_mid_job_loses_nothing",
        "tests/integration/stacks/test_cli_client.py::test_submit_status_and_history",
        "tests/integration/stacks/test_install.py::test_x[param::with::colons]",
    ]
    assert {scope_of(nodeid) for nodeid in stacks} == {SHARED_STACKS}
    assert scope_of("tests/integration/test_scaleout.py::test_a") == "tests/integration/test_scaleout.py"
    assert scope_of("tests/unit/test_glue.py::TestX::test_y") == "tests/unit/test_glue.py"
    # A module named like the folder elsewhere is not in it.
    assert scope_of("tests/integration/stacks_extra.py::t") == "tests/integration/stacks_extra.py"
