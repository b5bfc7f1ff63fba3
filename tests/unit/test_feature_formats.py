"""npz → safetensors on the fly (core/feature_formats.py), read back by the safetensors library itself."""

from __future__ import annotations

import io
import json
import struct
import zipfile

import numpy as np
import pytest
from safetensors.numpy import load as load_safetensors

from zootriage.core.data.refs import dataset_text, parse_dataset_ref
from zootriage.core.feature_formats import NotAnEntry, as_safetensors, file_pieces, open_npz


def _npz(**arrays: np.ndarray) -> io.BytesIO:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    buffer.seek(0)
    return buffer


def _entry(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "features": rng.standard_normal((37, 11)).astype(np.float32),
        "logits": rng.standard_normal((37, 5)).astype(np.float32),
        "labels": rng.integers(0, 5, 37).astype(np.int64),
        "described": np.frombuffer(json.dumps({"info": {"architecture": "cnn"}}).encode(), np.uint8),
    }


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_safetensors_holds_the_same_arrays_whatever_the_piece_size(chunk: int) -> None:
    arrays = _entry(np.random.default_rng(0))
    archive, members = open_npz(_npz(**arrays))
    encoded = as_safetensors(archive, members, {"run_id": "abc"}, chunk=chunk)
    pieces = list(encoded.pieces)
    data = b"".join(pieces)
    assert len(data) == encoded.length
    assert max(len(p) for p in pieces[1:]) <= max(chunk, 8)  # bounded pieces after the header
    loaded = load_safetensors(data)
    assert set(loaded) == {"features", "logits", "labels"}
    for name in loaded:
        assert loaded[name].dtype == arrays[name].dtype
        np.testing.assert_array_equal(loaded[name], arrays[name])
    (size,) = struct.unpack("<Q", data[:8])
    assert size % 8 == 0
    metadata = json.loads(data[8 : 8 + size])["__metadata__"]
    assert metadata["run_id"] == "abc"
    assert json.loads(metadata["described"]) == {"info": {"architecture": "cnn"}}


def test_fortran_ordered_and_big_endian_members_come_out_in_c_order_little_endian() -> None:
    rng = np.random.default_rng(1)
    features = np.asfortranarray(rng.standard_normal((9, 4)))
    labels = np.arange(9, dtype=">i4")
    archive, members = open_npz(_npz(features=features, labels=labels))
    assert members[0].fortran_order
    loaded = load_safetensors(b"".join(as_safetensors(archive, members, {}, chunk=8).pieces))
    np.testing.assert_array_equal(loaded["features"], features)
    np.testing.assert_array_equal(loaded["labels"], labels.astype("<i4"))


def test_an_empty_array_is_a_tensor_of_no_bytes() -> None:
    archive, members = open_npz(_npz(features=np.zeros((0, 3), np.float32), labels=np.ones(2, np.int64)))
    loaded = load_safetensors(b"".join(as_safetensors(archive, members, {}).pieces))
    assert loaded["features"].shape == (0, 3)
    np.testing.assert_array_equal(loaded["labels"], [1, 1])


def test_the_npz_streams_as_stored() -> None:
    buffer = _npz(**_entry(np.random.default_rng(2)))
    assert b"".join(file_pieces(buffer, chunk=5)) == buffer.getvalue()


def test_damaged_entries_are_refused_before_any_byte() -> None:
    good = _npz(**_entry(np.random.default_rng(3))).getvalue()
    with pytest.raises(NotAnEntry):
        open_npz(io.BytesIO(good[: len(good) // 2]))  # cut: no central directory
    with pytest.raises(NotAnEntry):
        open_npz(io.BytesIO(b"not a zip at all"))
    odd = io.BytesIO()
    with zipfile.ZipFile(odd, "w") as archive:
        archive.writestr("notes.txt", "hello")
    with pytest.raises(NotAnEntry, match="not an array"):
        open_npz(odd)
    with pytest.raises(NotAnEntry, match="dtype"):
        open_npz(_npz(names=np.array(["a", "b"])))  # text: no safetensors dtype


@pytest.mark.parametrize(
    "text", ["builtin:mnist", "folder:imagenet/val", "torchvision:CIFAR10:cifar", "archive:sets/digits.npz"]
)
def test_a_dataset_reference_reads_back_as_the_text_it_came_from(text: str) -> None:
    ref = parse_dataset_ref(text)
    assert dataset_text(ref) == text
    assert dataset_text(ref.model_dump(mode="json")) == text


def test_an_old_dataset_record_is_named_by_what_it_stored() -> None:
    assert dataset_text({"source": "retired", "path": "x/y"}) == "retired:x/y"
