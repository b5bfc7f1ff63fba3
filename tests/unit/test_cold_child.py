"""A child started for a job that already waits (``zootriage score``, a worker without a warm pool)
warms up only what every job needs; a child started ahead of its job warms up everything
(``core.extraction_child.warm_up``). Both serve the same job."""

from __future__ import annotations

from pathlib import Path

import pytest

from zootriage.core.confine import JOB_WAITING_ENV
from zootriage.core.data.mapped import CHILD_ENV
from zootriage.core.extraction import new_child
from zootriage.core.isolation import Child


def test_a_cold_child_skips_the_warm_up_of_other_jobs_and_a_warm_one_does_it() -> None:
    with new_child(job_waiting=True) as cold:
        assert cold.options.pop(JOB_WAITING_ENV) == "1"
        assert cold.receive("ready")["devices"] == []  # no device warmed, no builtin set decoded
    with new_child() as warm:
        assert JOB_WAITING_ENV not in warm.options
        assert warm.receive("ready")["devices"] == ["cpu"]
    assert set(cold.options) | set(warm.options) <= {CHILD_ENV}  # and the decoded sets' folder


def test_a_childs_options_cannot_replace_what_the_confinement_sets(tmp_path: Path) -> None:
    """Only ``ZOOTRIAGE_CHILD_*`` names: an option named like the confinement's limits, the child's
    import path or its cache folders is refused before anything starts."""
    for name in ("ZOOTRIAGE_CONFINE", "PYTHONPATH", "TORCH_HOME", "HOME"):
        with pytest.raises(ValueError, match="ZOOTRIAGE_CHILD_"):
            Child("json", options={name: "x"})
