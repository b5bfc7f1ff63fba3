"""The GLUE cost model (core.glue_cost): the shape of the estimate the admission check relies on."""

from __future__ import annotations

import pytest

from zootriage.app.settings import Settings
from zootriage.core.glue_cost import active_set_size, glue_seconds, peak_bytes


def test_linear_in_repeats_and_in_draws_past_the_shared_parts():
    """The Gram route adds the one-off n²·r of forming K, the regime check one product per distinct
    dichotomy (at most P); past them time is linear in the draws, and always in the repeats."""
    one = glue_seconds(1000, 50, 1000, dim=2048)
    assert glue_seconds(1000, 50, 3000, dim=2048) - glue_seconds(1000, 50, 2000, dim=2048) == pytest.approx(
        glue_seconds(1000, 50, 2000, dim=2048) - one
    )
    assert glue_seconds(1000, 50, 1000, repeats=3, dim=2048) == pytest.approx(3 * one)
    small = glue_seconds(100, 50, 1000, dim=2048)
    assert glue_seconds(100, 50, 1000, repeats=3, dim=2048) == pytest.approx(3 * small)
    assert glue_seconds(100, 50, 2000, dim=2048) < 2 * small


def test_primal_route_is_linear_in_points_and_gram_route_is_not():
    """On the primal route (n past 8192 and 2r) doubling the points per class doubles time and
    memory; on the Gram route memory grows faster than n."""
    base = glue_seconds(1000, 50, 100, dim=2048)
    assert 1.9 * base < glue_seconds(1000, 100, 100, dim=2048) <= 2 * base  # the geometry's part is n-free
    assert peak_bytes(1000, 100, 100, dim=2048) == 2 * peak_bytes(1000, 50, 100, dim=2048)
    assert peak_bytes(10, 100, 100, dim=2048) > 2 * peak_bytes(10, 50, 100, dim=2048)


def test_imagenet_scale_fits_in_four_gigabytes():
    """P = 1000 × M = 50 × N = 2048 at n_t = 1000: the issue's memory goal for the solver."""
    assert peak_bytes(1000, 50, 1000, dim=2048) < 4 * 2**30


def test_active_set_never_exceeds_the_rank():
    assert active_set_size(10_000, 8) == 8
    assert 30 < active_set_size(10, 500) < 35  # measured 33 at P = 10 (module docstring)


def test_default_budget_admits_imagenet_scale_and_refuses_ten_million_draws():
    """The API's cap (app.settings.glue_cost_budget) follows the model: the issue's ImageNet protocol
    (P = 1000 × M = 50, n_t = 1000, one repeat, at the assumed feature width) fits, while 10⁷ draws
    at P = 10 (tests/integration/test_job_errors.py: a 422 too_expensive) and two repeats of the
    ImageNet protocol do not."""
    budget = Settings.model_fields["glue_cost_budget"].default
    assert glue_seconds(1000, 50, 1000) < budget
    assert glue_seconds(1000, 50, 1000, repeats=2) > budget
    assert glue_seconds(10, 50, 100_000, repeats=100) > budget
