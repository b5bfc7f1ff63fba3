"""Each pool child pins one GPU among those the worker was given (``worker/gpus.py``), never another.
A worker started with ``CUDA_VISIBLE_DEVICES=2,3`` used to pin its children to GPUs 0 and 1 (the pool
index taken as a machine index), which belong to someone else; found by an audit of the GPU paths."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from zootriage.app.settings import Settings
from zootriage.worker import gpus


@pytest.mark.parametrize(
    ("given", "setting", "expected"),
    [
        ("2,3", None, ["2", "3", "2"]),  # the given devices, in turn
        ("GPU-aa, GPU-bb", None, ["GPU-aa", "GPU-bb", "GPU-aa"]),  # UUIDs as written
        ("5", 2, ["5", "5", "5"]),  # a setting of 2 cannot reach outside the one device given
        (None, 2, ["0", "1", "0"]),  # nothing given: the machine's GPUs by index
    ],
)
def test_each_pool_child_pins_a_device_it_was_given(
    monkeypatch: pytest.MonkeyPatch, given: str | None, setting: int | None, expected: list[str]
) -> None:
    monkeypatch.setattr(gpus.torch, "set_num_threads", lambda _n: None)
    pinned = []
    for index in range(3):
        if given is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", given)
        monkeypatch.setattr(gpus, "current_process", lambda i=index: SimpleNamespace(index=i))
        gpus.prepare_pool_child(Settings(gpus=setting))
        pinned.append(gpus.os.environ["CUDA_VISIBLE_DEVICES"])
    assert pinned == expected


def test_the_count_follows_the_devices_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert gpus.gpu_count(Settings(gpus=None)) == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpus.gpu_count(Settings(gpus=None)) == 0  # none given: a CPU worker
    assert gpus.gpu_count(Settings(gpus=1)) == 1  # the operator's setting wins
