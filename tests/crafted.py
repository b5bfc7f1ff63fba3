"""Hostile checkpoints, built from real ones the way the security review built them. Each payload
creates ``marker`` when it runs; the tests assert the marker never appears."""

from __future__ import annotations

import io
import json
import os
import subprocess
import zipfile
from pathlib import Path

import torch

EVIL_C = """
#include <stdio.h>
__attribute__((constructor)) static void run(void) { FILE *f = fopen("%s", "w"); if (f) fclose(f); }
"""


class SystemCall:
    """Unpickles as ``os.system(command)`` (a GLOBAL of posix.system)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (self.command,)


class ExecCall:
    """Unpickles as ``builtins.exec(source)``."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return exec, (self.source,)


def rewrite_zip(
    source: Path, target: Path, replace: dict[str, bytes], add: dict[str, bytes] | None = None
) -> Path:
    """Copy the zip ``source`` to ``target`` with members (by name suffix) replaced and others added."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as out:
        root = src.namelist()[0].partition("/")[0]
        for info in src.infolist():
            swap = next((data for suffix, data in replace.items() if info.filename.endswith(suffix)), None)
            out.writestr(info, swap if swap is not None else src.read(info))
        for name, data in (add or {}).items():
            out.writestr(f"{root}/{name}", data)
    return target


def _read_member(source: Path, suffix: str) -> bytes:
    with zipfile.ZipFile(source) as src:
        return src.read(next(n for n in src.namelist() if n.endswith(suffix)))


def evil_pickle(marker: Path, kind: str = "system") -> bytes:
    payload = SystemCall(f"touch {marker}") if kind == "system" else ExecCall(f"open({str(marker)!r}, 'w')")
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def sympy_expression(marker: Path) -> str:
    return f"__import__('os').system('touch {marker}') or Symbol('s77', positive=True, integer=True)"


def program_with_sympy_payload(program: Path, target: Path, marker: Path) -> Path:
    """Every symbol of the program's shape expressions runs ``touch marker`` when sympified."""
    text = _read_member(program, "models/model.json").decode()
    symbol = "Symbol('s77', positive=True, integer=True)"
    assert symbol in text, "the fixture program has a dynamic batch named s77"
    evil = text.replace(symbol, sympy_expression(marker))
    json.loads(evil)
    return rewrite_zip(program, target, {"models/model.json": evil.encode()})


def shared_library(folder: Path, marker: Path) -> bytes:
    """A real ELF shared library whose constructor creates ``marker`` when it is loaded."""
    source = folder / "evil.c"
    source.write_text(EVIL_C % marker)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "evil.so"), str(source)], check=True)
    return (folder / "evil.so").read_bytes()


def program_with_aoti_library(program: Path, target: Path, library: bytes) -> Path:
    return rewrite_zip(program, target, {}, {"data/aotinductor/model/model.wrapper.so": library})


def program_with_pickled_weight(program: Path, target: Path, marker: Path) -> Path:
    """The first weight is marked ``use_pickle`` and replaced by a pickle of ``os.system``."""
    config = json.loads(_read_member(program, "data/weights/model_weights_config.json"))
    first = next(iter(config["config"].values()))
    first["use_pickle"] = True
    replace = {
        "data/weights/model_weights_config.json": json.dumps(config).encode(),
        "data/weights/" + first["path_name"]: evil_pickle(marker),
    }
    return rewrite_zip(program, target, replace)


def program_with_pickled_constant(program: Path, target: Path, marker: Path) -> Path:
    """A pickled tensor constant that is really ``builtins.exec``."""
    config = {"config": {"evil": {"path_name": "tensor_0", "is_param": False, "use_pickle": True,
                                  "tensor_meta": None}}}
    return rewrite_zip(
        program, target, {"data/constants/model_constants_config.json": json.dumps(config).encode()},
        {"data/constants/tensor_0": evil_pickle(marker, "exec")},
    )


def state_dict_with_pickle(target: Path, marker: Path) -> Path:
    torch.save({"conv.weight": torch.zeros(2), "evil": SystemCall(f"touch {marker}")}, target)
    return target


def zip_bomb_program(program: Path, target: Path, inflated: int) -> Path:
    """The program with one weight replaced by ``inflated`` zero bytes, deflated to about 1/1000."""
    with zipfile.ZipFile(program) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            if info.filename.endswith("data/weights/weight_0"):
                with out.open(info.filename, "w", force_zip64=True) as member:
                    zeros = bytes(1 << 20)
                    for _ in range(inflated >> 20):
                        member.write(zeros)
            else:
                out.writestr(info, src.read(info))
    return target
