"""Gates that do not flake, on a real network's features: ccexam's MNIST CNN on builtin:mnist.

Each GLUE analysis is one scored run (its own seed: class subsample and draws); a gate compares two
runs' markers as the service does (``MarkerRecord`` with the run's repeats). The same weights gated
against themselves must never fail under 20 seeds; the same network with half its penultimate units
zeroed must fail under every seed.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from core.glue import MARKERS, GlueResult, analyze
from core.triage import MarkerRecord, evaluate_gate, parse_rule, verdict
from tests.mnist_features import ccexam_features

SEEDS = range(20)
REPEATS = 3
RULES = ("dimension: max_relative_drop 0.05", "utilization: max_relative_drop 0.05")


@cache
def features(variant: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = ccexam_features(per_class=20)
    if variant == "half_zeroed":
        x = x.copy()
        x[:, ::2] = 0.0
    return x, y


@cache
def run(variant: str, seed: int) -> GlueResult:
    x, y = features(variant)
    return analyze(x, y, n_t=100, points_per_class=12, repeats=REPEATS, seed=seed)


def record(name: str, result: GlueResult) -> MarkerRecord:
    values = {m: getattr(result, m) for m in MARKERS}
    return MarkerRecord(name, values, result.std or {}, repeats=result.repeats)


def gate(candidate: GlueResult, baseline: GlueResult) -> str:
    rules = [parse_rule(text, MARKERS) for text in RULES]
    return evaluate_gate(record("candidate", candidate), record("baseline", baseline), rules).status


def test_real_features_are_in_the_valid_regime() -> None:
    assert not run("same", 0).degenerate and not run("half_zeroed", 0).degenerate


def test_the_same_weights_never_fail_against_themselves() -> None:
    statuses = [gate(run("same", seed), run("same", seed + 1)) for seed in SEEDS]
    assert "failed" not in statuses
    verdicts = {
        verdict(record("v1", run("same", s)), record("v2", run("same", s + 1))).decision for s in SEEDS
    }
    assert verdicts == {"undecided"}


def test_half_the_units_zeroed_fails_under_every_seed() -> None:
    statuses = [gate(run("half_zeroed", seed), run("same", seed + 1)) for seed in SEEDS]
    assert statuses == ["failed"] * len(SEEDS)


@pytest.mark.parametrize("seed", [0, 1])
def test_one_repeat_never_decides(seed: int) -> None:
    x, y = features("half_zeroed")
    worse = analyze(x, y, n_t=100, points_per_class=12, seed=seed)
    base = analyze(*features("same"), n_t=100, points_per_class=12, seed=seed + 100)
    assert worse.std is None
    assert gate(worse, base) == "inconclusive"
