"""Gates that do not flake, on a real network's features: ccexam's MNIST CNN on builtin:mnist.

Each GLUE analysis is one scored run: its seed samples its own MNIST test images (REPEATS × POINTS
per class, so that the repeats are disjoint, ``core.glue_subsets``) and its own draws; a gate
compares two runs' markers as the service does (``MarkerRecord`` with the run's repeats and the std
a decision may use), by the non-inferiority test of ``core.triage.gates``. The same weights gated
against themselves, each pair on different images, must pass under at least 95% of 20 seeds and
never fail (a margin above the noise: the test fails an unchanged model at most 5% of the time, and
passes it at least 95% of the time once 2·q·se ≤ δ); the same network with half its penultimate
units zeroed must fail under every seed.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from tests.mnist_features import ccexam_features
from zootriage.core.glue import MARKERS, GlueResult, analyze
from zootriage.core.triage import MarkerRecord, evaluate_gate, parse_rule, verdict

pytestmark = pytest.mark.slow  # scores real models under many seeds

SEEDS = range(20)
REPEATS = 3
POINTS = 12
# 3 repeats of 12 points per class are noisy: 2·q·se of a relative drop is about 15–20% here, so
# the margin that an unchanged model passes is 20% (docs/ci.md: a margin must exceed the noise).
RULES = ("dimension: max_relative_drop 0.2", "utilization: max_relative_drop 0.2")


@cache
def features(variant: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    x, y = ccexam_features(per_class=REPEATS * POINTS, seed=seed)
    if variant == "half_zeroed":
        x = x.copy()
        x[:, ::2] = 0.0
    return x, y


@cache
def run(variant: str, seed: int) -> GlueResult:
    x, y = features(variant, seed)
    return analyze(x, y, n_t=100, points_per_class=POINTS, repeats=REPEATS, seed=seed)


def record(name: str, result: GlueResult) -> MarkerRecord:
    values = {m: getattr(result, m) for m in MARKERS}
    return MarkerRecord(name, values, result.decision_std or {}, repeats=result.repeats)


def gate(candidate: GlueResult, baseline: GlueResult) -> str:
    rules = [parse_rule(text, MARKERS) for text in RULES]
    return evaluate_gate(record("candidate", candidate), record("baseline", baseline), rules).status


def test_real_features_are_in_the_valid_regime_with_disjoint_repeats_on_new_images() -> None:
    for variant in ("same", "half_zeroed"):
        result = run(variant, 0)
        assert not result.degenerate
        assert result.noise is not None and result.noise.kind == "disjoint"
    assert not np.array_equal(features("same", 0)[0], features("same", 1)[0])


def test_the_same_weights_pass_against_themselves_and_never_fail() -> None:
    statuses = [gate(run("same", seed), run("same", seed + 1)) for seed in SEEDS]
    assert "failed" not in statuses
    assert statuses.count("passed") >= 0.95 * len(SEEDS)
    # On the very same run the change is 0: it passes whenever the margin exceeds q·se.
    assert all(gate(run("same", seed), run("same", seed)) == "passed" for seed in SEEDS)
    verdicts = {
        verdict(record("v1", run("same", s)), record("v2", run("same", s + 1))).decision for s in SEEDS
    }
    assert verdicts == {"undecided"}


def test_half_the_units_zeroed_fails_under_every_seed() -> None:
    statuses = [gate(run("half_zeroed", seed), run("same", seed + 1)) for seed in SEEDS]
    assert statuses == ["failed"] * len(SEEDS)


@pytest.mark.parametrize("seed", [0, 1])
def test_one_repeat_never_decides(seed: int) -> None:
    x, y = features("half_zeroed", seed)
    worse = analyze(x, y, n_t=100, points_per_class=POINTS, seed=seed)
    base = analyze(*features("same", seed + 1), n_t=100, points_per_class=POINTS, seed=seed + 1)
    assert worse.std is None
    assert gate(worse, base) == "inconclusive"
