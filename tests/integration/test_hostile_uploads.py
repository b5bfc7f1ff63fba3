"""Uploads built to run code on the server, through the real API and the real worker task: refused
with a clear code, nothing stored, and the payload's marker file never created."""

from __future__ import annotations

import errno
import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import zootriage.app.services.uploads as uploads
from tests import crafted
from tests.integration.jobs import run_job
from zootriage.app.settings import Settings

Builder = Callable[[Path, Path, Path], Path]


def _sympy(program: Path, folder: Path, marker: Path) -> Path:
    return crafted.program_with_sympy_payload(program, folder / "shapes.pt2", marker)


def _aoti(program: Path, folder: Path, marker: Path) -> Path:
    library = crafted.shared_library(folder, marker)
    return crafted.program_with_aoti_library(program, folder / "aoti.pt2", library)


def _weight(program: Path, folder: Path, marker: Path) -> Path:
    return crafted.program_with_pickled_weight(program, folder / "weight.pt2", marker)


def _constant(program: Path, folder: Path, marker: Path) -> Path:
    return crafted.program_with_pickled_constant(program, folder / "constant.pt2", marker)


def _state_dict(_program: Path, folder: Path, marker: Path) -> Path:
    return crafted.state_dict_with_pickle(folder / "state.pt", marker)


def _bomb(program: Path, folder: Path, _marker: Path) -> Path:
    return crafted.zip_bomb_program(program, folder / "bomb.pt2", 256 << 20)


HOSTILE: list[tuple[Builder, str]] = [
    (_sympy, "checkpoint_unsafe"),
    (_aoti, "checkpoint_unsafe"),
    (_weight, "checkpoint_needs_code"),
    (_constant, "checkpoint_needs_code"),
    (_state_dict, "checkpoint_needs_code"),
    (_bomb, "checkpoint_too_large"),
]


@pytest.mark.parametrize(("build", "code"), HOSTILE, ids=[b.__name__.strip("_") for b, _ in HOSTILE])
def test_hostile_upload_is_refused(
    client: TestClient, settings: Settings, digit_programs: dict[str, Path], tmp_path: Path,
    build: Builder, code: str,
) -> None:
    marker = tmp_path / "ran"
    evil = build(digit_programs["ccexam"], tmp_path, marker)
    data = evil.read_bytes()
    response = client.post("/v1/checkpoints", files={"file": (evil.name, data)})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == code
    assert response.json()["message"].startswith(evil.name)
    assert str(settings.effective_upload_dir) not in response.json()["message"]
    assert not list(settings.effective_upload_dir.glob(hashlib.sha256(data).hexdigest() + "*"))
    assert not list(settings.effective_upload_dir.glob(".upload-*"))
    assert not marker.exists()


def test_a_hostile_file_already_stored_fails_its_job(
    client: TestClient, settings: Settings, digit_programs: dict[str, Path], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Files stored before the static check existed: the worker's child checks them again."""
    marker = tmp_path / "ran"
    evil = _sympy(digit_programs["ccexam"], tmp_path, marker)
    sha = hashlib.sha256(evil.read_bytes()).hexdigest()
    settings.effective_upload_dir.mkdir(parents=True, exist_ok=True)
    (settings.effective_upload_dir / f"{sha}.pt2").write_bytes(evil.read_bytes())
    job = run_job(client, settings, monkeypatch, {"source": "checkpoint", "path": f"{sha}.pt2"})
    assert job["status"] == "failed"
    assert job["error"]["code"] == "checkpoint_unsafe"
    assert job["error"]["message"].startswith(f"{sha}.pt2: a shape expression outside the allowed grammar")
    assert not marker.exists()


def test_concurrent_uploads_never_load_anything_evil(
    client: TestClient, digit_programs: dict[str, Path], mnist_program: Path, tmp_path: Path
) -> None:
    """Valid and evil files interleaved on 8 threads (the LeNet programs are over this test's size
    limit, so both valid ones are ccexam exports)."""
    marker = tmp_path / "ran"
    program = digit_programs["ccexam"]
    files = [
        ("ok.pt2", program.read_bytes(), 201),
        ("ok2.pt2", mnist_program.read_bytes(), 201),
        ("w.pt2", _weight(program, tmp_path, marker).read_bytes(), 422),
        ("c.pt2", _constant(program, tmp_path, marker).read_bytes(), 422),
        ("s.pt", _state_dict(program, tmp_path, marker).read_bytes(), 422),
        ("shapes.pt2", _sympy(program, tmp_path, marker).read_bytes(), 422),
    ]
    work = [files[i % len(files)] for i in range(24)]

    def upload(item: tuple[str, bytes, int]) -> tuple[int, int]:
        name, data, expected = item
        return client.post("/v1/checkpoints", files={"file": (name, data)}).status_code, expected

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(upload, work))
    assert all(got == expected or (expected == 201 and got == 200) for got, expected in answers), answers
    assert not marker.exists()


def test_a_full_disk_answers_507_and_leaves_no_temp_file(
    client: TestClient, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from safetensors.torch import save_file

    save_file({"w": torch.randn(64, 64)}, tmp_path / "fresh.safetensors")  # bytes no test stored before

    def full(_fd: int, _chunk: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(uploads.os, "write", full)
    data = (tmp_path / "fresh.safetensors").read_bytes()
    response = client.post("/v1/checkpoints", files={"file": ("fresh.safetensors", data)})
    monkeypatch.undo()
    assert response.status_code == 507, response.text
    assert response.json()["code"] == "insufficient_storage"
    assert not list(settings.effective_upload_dir.glob(".upload-*"))
    assert not list(settings.effective_upload_dir.glob(hashlib.sha256(data).hexdigest() + "*"))
