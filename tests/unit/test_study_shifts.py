"""Label-preserving corruptions: shape and range kept, seeded, each changes the images as it says."""

from __future__ import annotations

import pytest
import torch

from zootriage.core.study.shifts import SHIFTS, corrupt


def _images() -> torch.Tensor:
    x = torch.zeros(3, 1, 28, 28)
    x[:, :, 8:20, 12:16] = 1.0  # a vertical bar
    return x


@pytest.mark.parametrize(
    "kind,severity", [("noise", 0.3), ("blur", 1.0), ("contrast", 0.5), ("rotation", 90.0)]
)
def test_shift_keeps_shape_and_range_and_changes_the_images(kind: str, severity: float) -> None:
    x = _images()
    y = corrupt(x, kind, severity, seed=0)
    assert y.shape == x.shape and float(y.min()) >= 0.0 and float(y.max()) <= 1.0
    assert not torch.allclose(x, y)


def test_each_shift_does_what_it_says() -> None:
    x = _images()
    assert torch.equal(corrupt(x, "noise", 0.3, seed=4), corrupt(x, "noise", 0.3, seed=4))
    assert not torch.equal(corrupt(x, "noise", 0.3, seed=4), corrupt(x, "noise", 0.3, seed=5))
    assert float(corrupt(x, "contrast", 0.5).std()) == pytest.approx(0.5 * float(x.std()), rel=1e-5)
    assert float(corrupt(x, "blur", 1.0).max()) < 1.0  # the bar's edges are smeared
    rotated = corrupt(x, "rotation", 90.0)
    assert float(rotated[0, 0, 12:16, 8:20].mean()) > 0.9  # the vertical bar is now horizontal


def test_bad_shifts_raise() -> None:
    with pytest.raises(ValueError, match="unknown shift"):
        corrupt(_images(), "fog", 1.0)
    with pytest.raises(ValueError, match="contrast severity"):
        corrupt(_images(), "contrast", 1.5)
    with pytest.raises(ValueError, match=r"\(n, C, H, W\)"):
        corrupt(torch.zeros(28, 28), "blur", 1.0)
    assert set(SHIFTS) == {"noise", "blur", "contrast", "rotation"}
