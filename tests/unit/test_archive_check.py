"""The static allow-list check: crafted files that would run code are refused before any torch loader
opens them, in the check itself and in the worker-side loader; real files pass."""

from __future__ import annotations

import json
import pickle
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from tests import crafted
from tests.conftest import SITE
from zootriage.core.errors import (
    CheckpointNeedsCode,
    CheckpointTooLarge,
    CheckpointUnsafe,
    NotACheckpoint,
    TruncatedCheckpoint,
    ZooError,
)
from zootriage.core.zoo.archive_check import check_file
from zootriage.core.zoo.loader import load_model
from zootriage.core.zoo.pickle_scan import PickleRefused, scan_pickle
from zootriage.core.zoo.program_json import UnsafeProgram, check_expression, check_target
from zootriage.core.zoo.refs import CheckpointRef


def _refused_everywhere(path: Path, error: type[ZooError], pattern: str, marker: Path) -> None:
    """Refused by the static check and by the loader the worker's child runs; nothing ran."""
    with pytest.raises(error, match=pattern):
        check_file(path, path.name)
    with pytest.raises(error, match=pattern):
        load_model(CheckpointRef(path=str(path)) if path.suffix == ".pt2"
                   else CheckpointRef(path=str(path), library="torchvision", architecture="resnet18"))
    assert not marker.exists()


def test_real_checkpoints_pass(digit_programs: dict[str, Path], tmp_path: Path) -> None:
    for program in digit_programs.values():
        check_file(program, program.name)
    for legacy in (SITE / "advertorch_examples" / "trained_models" / "mnist_lenet5_clntrained.pt",
                   SITE / "ccexam" / "weights" / "mnist.pth"):
        check_file(legacy, legacy.name)
    state = __import__("torchvision").models.resnet18().state_dict()
    torch.save(state, tmp_path / "r.pt")
    save_file(state, tmp_path / "r.safetensors")
    check_file(tmp_path / "r.pt", "r.pt")
    check_file(tmp_path / "r.safetensors", "r.safetensors")


def test_sympy_shape_expression_payload(digit_programs: dict[str, Path], tmp_path: Path) -> None:
    marker = tmp_path / "sympy_ran"
    probe = tmp_path / "probe_ran"
    live = f"import sympy; sympy.sympify({crafted.sympy_expression(probe)!r})"
    subprocess.run([sys.executable, "-c", live], check=True, capture_output=True)
    assert probe.exists(), "the payload is live: sympify runs it"
    evil = crafted.program_with_sympy_payload(digit_programs["ccexam"], tmp_path / "shapes.pt2", marker)
    _refused_everywhere(evil, CheckpointUnsafe, r"shapes\.pt2: a shape expression outside", marker)


def test_aotinductor_shared_library(digit_programs: dict[str, Path], tmp_path: Path) -> None:
    marker = tmp_path / "so_ran"
    probe = tmp_path / "probe_ran"
    (tmp_path / "probe").mkdir()
    live = crafted.shared_library(tmp_path / "probe", probe)
    (tmp_path / "probe.so").write_bytes(live)
    subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(tmp_path / 'probe.so')!r})"],
                   check=True)
    assert probe.exists(), "the library is live: loading it runs its constructor"
    evil = crafted.program_with_aoti_library(
        digit_programs["ccexam"], tmp_path / "aoti.pt2", crafted.shared_library(tmp_path, marker)
    )
    extracted = set(Path(tempfile.gettempdir()).glob("aotinductor_*"))
    _refused_everywhere(evil, CheckpointUnsafe, r"aoti\.pt2: the program holds a native library", marker)
    assert set(Path(tempfile.gettempdir()).glob("aotinductor_*")) == extracted  # nothing unpacked


@pytest.mark.parametrize("where", ["weight", "constant", "state_dict"])
def test_evil_pickles(digit_programs: dict[str, Path], tmp_path: Path, where: str) -> None:
    marker = tmp_path / f"{where}_ran"
    if where == "weight":
        evil = crafted.program_with_pickled_weight(digit_programs["ccexam"], tmp_path / "w.pt2", marker)
        pattern = r"w\.pt2 \(data/weights/weight_0\): the pickle needs code .*imports posix\.system"
    elif where == "constant":
        evil = crafted.program_with_pickled_constant(digit_programs["ccexam"], tmp_path / "c.pt2", marker)
        pattern = r"c\.pt2 \(data/constants/tensor_0\): .*imports (__builtin__|builtins)\.exec"
    else:
        evil = crafted.state_dict_with_pickle(tmp_path / "s.pt", marker)
        pattern = r"s\.pt: the pickle needs code to load \(it imports posix\.system\)"
    _refused_everywhere(evil, CheckpointNeedsCode, pattern, marker)


def test_members_outside_the_layout_and_odd_names(digit_programs: dict[str, Path], tmp_path: Path) -> None:
    extra = crafted.program_with_aoti_library(digit_programs["ccexam"], tmp_path / "x.pt2", b"data")
    with pytest.raises(CheckpointUnsafe):
        check_file(extra, "x.pt2")
    torch.save({"w": torch.zeros(2)}, tmp_path / "plain.pt")
    scripted = crafted.rewrite_zip(tmp_path / "plain.pt", tmp_path / "code.pt", {}, {"code/m.py": b"1"})
    with pytest.raises(CheckpointUnsafe, match=r"code\.pt: the torch archive holds 'code/m\.py'"):
        check_file(scripted, "code.pt")


def test_zip_bomb_is_refused_without_allocating(digit_programs: dict[str, Path], tmp_path: Path) -> None:
    bomb = crafted.zip_bomb_program(digit_programs["ccexam"], tmp_path / "bomb.pt2", 1 << 30)
    assert bomb.stat().st_size < 4 << 20
    script = (
        "import sys; from pathlib import Path\n"
        "from zootriage.core.zoo.archive_check import check_file\n"
        "def hwm():\n"
        "    return int(next(x for x in open('/proc/self/status') if x.startswith('VmHWM')).split()[1])\n"
        "before = hwm()\n"
        "try:\n    check_file(Path(sys.argv[1]), 'bomb.pt2')\nexcept Exception as exc:\n    print(exc.code)\n"
        "print((hwm() - before) * 1024)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(bomb)], check=True, capture_output=True, text=True
    )
    code, grown = out.stdout.split()
    assert code == "checkpoint_too_large"
    assert int(grown) < 100 << 20
    with pytest.raises(CheckpointTooLarge, match=r"bomb\.pt2: data/weights/weight_0 decompresses to more"):
        check_file(bomb, "bomb.pt2")


def test_safetensors_headers(tmp_path: Path) -> None:
    good = tmp_path / "g.safetensors"
    save_file({"w": torch.zeros(4)}, good)
    header_len = struct.unpack("<Q", good.read_bytes()[:8])[0]
    header = json.loads(good.read_bytes()[8: 8 + header_len])

    def write(name: str, table: dict, body: bytes = bytes(16)) -> Path:
        raw = json.dumps(table).encode()
        (tmp_path / name).write_bytes(struct.pack("<Q", len(raw)) + raw + body)
        return tmp_path / name

    huge = {"w": {"dtype": "F32", "shape": [1 << 38], "data_offsets": [0, 1 << 40]}}
    past_end = write("p.safetensors", huge)
    with pytest.raises(TruncatedCheckpoint, match=r"p\.safetensors: \d+ bytes, its header describes"):
        check_file(past_end, "p.safetensors")
    wrong_size = write("s.safetensors", {"w": {**header["w"], "data_offsets": [0, 8]}})
    with pytest.raises(NotACheckpoint, match="malformed entry 'w'"):
        check_file(wrong_size, "s.safetensors")
    (tmp_path / "h.safetensors").write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(NotACheckpoint, match="no valid header"):
        check_file(tmp_path / "h.safetensors", "h.safetensors")


def test_grammars() -> None:
    for ok in ("s0", "s77*2 + 1", "Max(s0, 2)", "(s0 + 1)//2 % 4", "Symbol('s7', integer=True)"):
        check_expression(ok)
    for bad in ("__import__('os')", "s0.__class__", "lambda: 1", "Symbol('x; y')", "[s0]", "'text'",
                "Symbol('s1', evil=__import__('os'))", "getattr(s0, 'x')"):
        with pytest.raises(UnsafeProgram):
            check_expression(bad)
    check_target("torch.ops.aten.conv2d.default")
    check_target("_operator.getitem")
    for bad in ("torch.os.system", "torch.load", "builtins.exec", "torch.ops.aten.from_file.default", "#ext"):
        with pytest.raises(UnsafeProgram):
            check_target(bad)


def test_stack_global_names_must_be_literals() -> None:
    scan_pickle(pickle.dumps({"a": [1, 2.0, "x", b"y"]}, protocol=4))
    with pytest.raises(PickleRefused, match=r"posix\.system"):
        scan_pickle(pickle.dumps(crafted.SystemCall("true"), protocol=4))  # STACK_GLOBAL via MEMOIZE
    with pytest.raises(PickleRefused, match=r"__builtin__\.exec"):
        scan_pickle(pickle.dumps(crafted.ExecCall("1"), protocol=2))  # GLOBAL
