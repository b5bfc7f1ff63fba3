"""A child's own control groups (core.cgroups): its memory bound and its count of processes and
threads. The groups are made for real where this machine lets the tests write its cgroupfs (the build
machine's v1 hierarchies); the choice of hierarchy and files is checked on folders laid out as each
kind of cgroupfs is, and the fork bombs run for real in sandboxed children
(tests/isolation_probe.py, mode ``forks``)."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from zootriage.core import cgroups
from zootriage.core.confine import ENV
from zootriage.core.isolation import Child, ChildLimits, _environment

PROBE = "tests.isolation_probe"
BOMB_LIMITS = ChildLimits(memory_bytes=1 << 30, cpu_s=60, processes=64)


def _own_pids_groups() -> bool:
    """Whether a child here gets a pids group of its own (a group made and removed again to see)."""
    group = cgroups.ChildCgroup.create(1 << 30, 64)
    if group is None:
        return False
    group.remove()
    return group.tasks is not None


needs_pids_groups = pytest.mark.skipif(not _own_pids_groups(), reason="no writable pids cgroup here")


def _fake_root(folder: Path, controllers: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "cgroup.subtree_control").write_text(controllers + "\n")
    return folder


def _files(folder: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in folder.iterdir()}


def test_in_cgroup_v2_both_bounds_are_files_of_one_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process joins one group of the unified hierarchy, so memory and pids share it."""
    root = _fake_root(tmp_path / "unified", "cpu memory io pids")
    monkeypatch.setattr(cgroups, "V2_ROOTS", (tmp_path / "absent", root))
    group = cgroups.ChildCgroup.create(256 << 20, 99)
    assert group is not None and group.version == 2
    assert group.folders == [group.memory] == [group.tasks] and group.memory is not None
    assert _files(group.memory) == {"memory.max": str(256 << 20), "memory.swap.max": "0", "pids.max": "99"}


def test_in_cgroup_v2_a_controller_the_root_does_not_enable_bounds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _fake_root(tmp_path / "unified", "pids")
    monkeypatch.setattr(cgroups, "V2_ROOTS", (root,))
    group = cgroups.ChildCgroup.create(256 << 20, 99)
    assert group is not None and group.memory is None and group.tasks is not None
    assert _files(group.tasks) == {"pids.max": "99"}
    assert not group.oom_killed()


def test_in_cgroup_v1_each_controller_has_a_group_in_its_own_hierarchy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = _fake_root(tmp_path / "unified", "")  # a hybrid machine: v2 mounted, no controller in it
    memory, pids = (tmp_path / "v1" / name for name in ("memory", "pids"))
    memory.mkdir(parents=True)
    pids.mkdir()
    monkeypatch.setattr(cgroups, "V2_ROOTS", (empty,))
    monkeypatch.setattr(cgroups, "V1_ROOTS", {"memory": memory, "pids": pids})
    group = cgroups.ChildCgroup.create(256 << 20, 99)
    assert group is not None and group.version == 1
    assert group.memory is not None and group.memory.parent == memory
    assert group.tasks is not None and group.tasks.parent == pids
    assert group.folders == [group.memory, group.tasks]
    assert _files(group.memory) == {"memory.limit_in_bytes": str(256 << 20),
                                    "memory.memsw.limit_in_bytes": str(256 << 20)}
    assert _files(group.tasks) == {"pids.max": "99"}
    (group.tasks / "pids.events").write_text("max 3\n")
    assert group.tasks_refused() == 3
    for folder in group.folders:  # as the kernel would: a group's files go with it
        for path in folder.iterdir():
            path.unlink()
    group.remove()
    assert not any(folder.exists() for folder in group.folders)


def test_where_no_hierarchy_can_be_written_there_is_no_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cgroups, "V2_ROOTS", (tmp_path / "absent",))
    monkeypatch.setattr(cgroups, "V1_ROOTS", {"memory": tmp_path / "none", "pids": tmp_path / "nothing"})
    assert cgroups.ChildCgroup.create(256 << 20, 99) is None


@needs_pids_groups
def test_a_fork_bomb_stops_at_its_own_bound() -> None:
    """The bomb gets EAGAIN at the child's bound, well before the host's pid_max; the kernel counted the
    refusals, and every process it made ends with its sandbox."""
    with Child(PROBE, limits=BOMB_LIMITS) as child:
        assert child.cgroup is not None and child.cgroup.tasks is not None
        group = child.cgroup.tasks
        assert (group / "pids.max").read_text().strip() == "64"
        assert child.proc is not None and str(child.proc.pid) in (group / "cgroup.procs").read_text().split()
        child.send({"mode": "forks"})
        result = child.receive("result")
        assert child.cgroup.tasks_refused() > 0
    assert result["error"] == errno.EAGAIN and 32 < result["forks"] < 64, result
    assert not group.exists()


@needs_pids_groups
def test_a_fork_bomb_does_not_starve_a_job_beside_it() -> None:
    """Both children run as the same sandbox user: counted per user (RLIMIT_NPROC), the first bomb's
    processes left the second none; counted per child, each gets its own bound's worth."""
    with Child(PROBE, limits=BOMB_LIMITS) as first, Child(PROBE, limits=BOMB_LIMITS) as second:
        first.send({"mode": "forks"})
        held = first.receive("result")  # its processes live on, asleep, until its sandbox ends
        second.send({"mode": "forks"})
        beside = second.receive("result")
    assert held["error"] == beside["error"] == errno.EAGAIN, (held, beside)
    assert abs(held["forks"] - beside["forks"]) <= 2 and beside["forks"] > 32, (held, beside)


def test_without_a_group_the_bomb_stops_at_the_users_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no pids group can be made, RLIMIT_NPROC is the bound (per user, so set low here only in a
    test that runs one child)."""
    monkeypatch.setattr(cgroups, "V2_ROOTS", ())
    monkeypatch.setattr(cgroups, "V1_ROOTS", {"memory": Path("/nonexistent"), "pids": Path("/nonexistent")})
    with Child(PROBE, limits=BOMB_LIMITS) as child:
        assert child.cgroup is None
        child.send({"mode": "forks"})
        result = child.receive("result")
    assert result["error"] == errno.EAGAIN and result["forks"] < 64, result


@pytest.mark.parametrize("user_count", [True, False])
def test_the_users_process_limit_is_set_only_when_asked(tmp_path: Path, user_count: bool) -> None:
    """RLIMIT_NPROC counts every process of the child's user: the child asks for it only where no pids
    group counts its own and its user is its own (not the worker's, whose other processes would count)."""
    config = json.loads(_environment(tmp_path, ChildLimits(), False, 1 << 30, "json", user_count)[ENV])
    assert ("RLIMIT_NPROC" in config["rlimits"]) is user_count


def test_the_child_asks_for_the_users_limit_only_without_a_pids_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[bool] = []

    def recording(*args: Any) -> dict[str, str]:
        asked.append(args[-1])
        return _environment(*args)

    monkeypatch.setattr("zootriage.core.isolation._environment", recording)
    with Child(PROBE, limits=BOMB_LIMITS) as child:
        grouped = child.cgroup is not None and child.cgroup.tasks is not None
        own_user = child.mode.sandboxed or child.mode.user is not None
    assert asked == [own_user and not grouped]
