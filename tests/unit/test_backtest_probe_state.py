"""A task's probe state (``probe/<task>.json``, core.backtest.run.probe_state) is computed once per study
folder: of two shards that start together, one computes and writes it while the other waits on the
folder's lock and then reads that file, so both use the same C; a file already there is only read."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, cast

from zootriage.core.backtest.probes import ProbeSplit
from zootriage.core.backtest.run import folder_lock, probe_state
from zootriage.core.backtest.splits import TaskData


class Counting:
    """A C chooser that answers a different C on each call (0.1, then 1.0, ...), so that two shards
    that both computed would disagree; the first call waits (bounded) for the other shard to finish,
    which without the lock it would do by computing its own."""

    def __init__(self) -> None:
        self.calls = 0
        self.computing = threading.Event()
        self.other_done = threading.Event()

    def __call__(self, splits: list[ProbeSplit]) -> tuple[float, dict[float, float]]:
        self.calls += 1
        c = 10.0 ** (self.calls - 2)
        self.computing.set()
        if self.calls == 1:
            self.other_done.wait(timeout=2.0)
        return c, {c: 0.5}


def _probe(path: Path, choose: Counting) -> dict[str, Any]:
    # No floor models: the state is the chooser's answer alone (builder and data are never used).
    return probe_state(
        path, "A", [], cast(TaskData, None), cast(Any, "cpu"), builder=cast(Any, None), choose=choose,
        outcomes_of=lambda split, c: {}, extra={"n_scored": 7},
    )  # fmt: skip


def test_two_shards_starting_together_compute_the_probe_state_once(tmp_path: Path) -> None:
    path = tmp_path / "probe" / "A.json"
    choose = Counting()
    states: dict[str, dict[str, Any]] = {}

    def shard(name: str) -> None:
        states[name] = _probe(path, choose)
        if name == "second":
            choose.other_done.set()

    first = threading.Thread(target=shard, args=("first",))
    first.start()
    assert choose.computing.wait(timeout=60)  # the first shard is computing, the file not yet written
    assert not path.exists()
    second = threading.Thread(target=shard, args=("second",))
    second.start()
    first.join(timeout=60)
    second.join(timeout=60)
    assert not first.is_alive() and not second.is_alive()

    assert choose.calls == 1
    written = json.loads(path.read_text())
    assert written == {"c": 0.1, "validation_accuracy": {"0.1": 0.5}, "floors": [], "n_scored": 7}
    assert states["first"] == states["second"] == written
    assert sorted(p.name for p in path.parent.iterdir()) == ["A.json"]  # no lock or temporary file


def test_a_written_probe_state_is_read_not_recomputed(tmp_path: Path) -> None:
    path = tmp_path / "probe" / "A.json"
    path.parent.mkdir()
    kept = {"c": 1.0, "validation_accuracy": {"1.0": 0.9}, "floors": [], "n_scored": 3}
    path.write_text(json.dumps(kept))
    choose = Counting()
    with folder_lock(path.parent):  # read without the lock: a written file is complete
        assert _probe(path, choose) == kept
    assert choose.calls == 0
