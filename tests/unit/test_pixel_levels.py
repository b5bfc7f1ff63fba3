"""``core.data.images.pixel_levels``: the in-place form of ``clip(rint(x * scale), 0, 255)`` as uint8."""

from __future__ import annotations

import numpy as np
import pytest

from zootriage.core.data.images import pixel_levels


def _reference(x: np.ndarray, scale: float) -> np.ndarray:
    return np.clip(np.rint(x * scale), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_levels_as_the_expression_and_x_is_its_work_buffer(dtype: type) -> None:
    """Random values well outside [0, 1] (clipped both ways), exact halves (rint rounds them to even),
    MNIST's k / 256 grid: the same uint8 as the expression; a writeable float ``x`` is overwritten."""
    rng = np.random.default_rng(7)
    values = np.concatenate([
        rng.uniform(-0.5, 1.5, 10_000), np.arange(256) / 256, (np.arange(511) + 0.5) / 255,
    ]).astype(dtype)
    expected = _reference(values.copy(), 255)
    work = values.copy()
    assert np.array_equal(pixel_levels(work, 255), expected)
    assert not np.array_equal(work, values)  # scaled in place
    grid = (np.arange(256) / 256).astype(dtype)
    assert np.array_equal(pixel_levels(grid, 256), np.arange(256, dtype=np.uint8))


def test_an_integer_or_read_only_array_is_left_as_it_was() -> None:
    """Integers (an archive's 0/1 masks) and read-only arrays are worked on in a float64 copy."""
    ones = np.array([[0, 1], [1, 0]], dtype=np.int64)
    assert np.array_equal(pixel_levels(ones, 255), [[0, 255], [255, 0]])
    assert ones.tolist() == [[0, 1], [1, 0]]
    frozen = np.array([0.25, 0.5, 1.0])
    frozen.flags.writeable = False
    assert np.array_equal(pixel_levels(frozen, 255), _reference(frozen, 255))
    assert frozen.tolist() == [0.25, 0.5, 1.0]
