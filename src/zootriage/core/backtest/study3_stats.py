"""Study 3's statistics (docs/study/PLAN-3.md, "Primary tests", "The random-init floor", "The frozen
rule"), as pure functions.

- A pick of a rule on a pair (a, b) with rule values v and mean outcomes y: the recipe with the higher
  v; an exact tie is *undecided* (not correct, reported apart from wrong). It is correct when the
  picked recipe's mean outcome is higher.
- d_a = (correct picks of the rule − correct picks of the baseline) / eligible pairs, per architecture
  a, pooled over both tasks; the test is the exact one-sided sign flip of mean_a d_a over
  architectures (:func:`core.backtest.stats.sign_flip`), minimum attainable p = 2^−n. With fewer than
  ``min_archs`` architectures the test is *not assessable* and enters Holm with p = 1.
- Admission of a recipe: mean gain over its architecture's floor ≥ ``gain`` and a one-sided Welch t
  test (recipe seeds vs floor models) p < ``p_max``; when both variances are 0 the gain alone decides.
- Architecture-cluster bootstrap: architectures resampled with replacement (``default_rng(0)``), the
  resampled architectures' pair counts pooled; 95 % percentile interval.
- The frozen rule's calibration: p̂ = max(P, 1 − P) oriented to the predicted winner; Brier =
  mean (p̂ − won)²; ECE over 5 equal-width bins of [0.5, 1] = Σ_b (n_b/N) |mean p̂_b − win rate_b|.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy.stats import f as f_dist
from scipy.stats import ttest_ind

from zootriage.core.backtest.freeze_rule import FEATURES, standardise, win_probability
from zootriage.core.backtest.stats import holm, percentile_ci, sign_flip

Pick = Literal["correct", "wrong", "undecided"]
FROZEN_SHA256 = "167c76d0fdafc2183947c57de5550a9109dc03ade004ac6a04d40fc840d517e0"
BIN_EDGES = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def pick(value_a: float | None, value_b: float | None, y_a: float, y_b: float) -> Pick:
    """The outcome of "pick the higher value" on one pair (``None`` = the rule cannot decide)."""
    if value_a is None or value_b is None or value_a == value_b:
        return "undecided"
    return "correct" if (value_a > value_b) == (y_a > y_b) else "wrong"


@dataclass(frozen=True)
class Tally:
    correct: int = 0
    wrong: int = 0
    undecided: int = 0

    @property
    def pairs(self) -> int:
        return self.correct + self.wrong + self.undecided

    def add(self, outcome: Pick) -> Tally:
        return Tally(
            self.correct + (outcome == "correct"),
            self.wrong + (outcome == "wrong"),
            self.undecided + (outcome == "undecided"),
        )

    def accuracy(self) -> float | None:
        return self.correct / self.pairs if self.pairs else None


def differences(rule: Mapping[str, Tally], baseline: Mapping[str, Tally]) -> dict[str, float]:
    """d_a per architecture with at least one eligible pair (the two tallies share the pairs)."""
    out = {}
    for arch in sorted(rule):
        if rule[arch].pairs != baseline[arch].pairs:
            raise ValueError(f"{arch}: rule and baseline were scored on different pairs")
        if rule[arch].pairs:
            out[arch] = (rule[arch].correct - baseline[arch].correct) / rule[arch].pairs
    return out


def primary_test(d: Mapping[str, float], min_archs: int) -> dict[str, Any]:
    """The exact one-sided sign flip over architectures; ``p_for_holm`` is 1 when not assessable."""
    n = len(d)
    base: dict[str, Any] = {"n_archs": n, "d": dict(d), "min_p": 2.0**-n if n else None}
    if n < min_archs or n == 0:
        mean = float(np.mean(list(d.values()))) if d else None
        return {**base, "mean": mean, "p": None, "assessable": False, "p_for_holm": 1.0}
    flip = sign_flip(list(d.values()))
    return {**base, "mean": flip.mean, "p": flip.p_greater, "assessable": True, "p_for_holm": flip.p_greater}


def holm_decisions(tests: Mapping[str, Mapping[str, Any]], alpha: float) -> dict[str, dict[str, Any]]:
    """Holm's adjusted p̃ over exactly ``tests`` and each test's verdict (p̃ ≤ α)."""
    adjusted = holm({name: float(t["p_for_holm"]) for name, t in tests.items()})
    return {name: {"p_holm": adjusted[name], "significant": adjusted[name] <= alpha} for name in tests}


def admitted(recipe: Sequence[float], floor: Sequence[float], gain: float, p_max: float) -> dict[str, Any]:
    """The admission test of one recipe against its architecture × task floor."""
    r, f = np.asarray(recipe, dtype=np.float64), np.asarray(floor, dtype=np.float64)
    delta = float(r.mean() - f.mean())
    if np.ptp(r) == 0 and np.ptp(f) == 0:
        return {"gain": delta, "p": None, "admitted": delta >= gain}
    p = float(ttest_ind(r, f, equal_var=False, alternative="greater").pvalue)
    if not np.isfinite(p):  # fewer than 2 values on a side: Welch's test is undefined, nothing admitted
        return {"gain": delta, "p": None, "admitted": False}
    return {"gain": delta, "p": p, "admitted": bool(delta >= gain and p < p_max)}


def cluster_bootstrap(
    counts: Mapping[str, tuple[int, int]], n_boot: int, seed: int = 0
) -> tuple[float, float] | None:
    """95 % interval of pooled correct / pairs, resampling architectures with replacement."""
    archs = sorted(a for a, (_, n) in counts.items() if n > 0)
    if not archs:
        return None
    c = np.array([counts[a][0] for a in archs], dtype=np.float64)
    n = np.array([counts[a][1] for a in archs], dtype=np.float64)
    idx = np.random.default_rng(seed).integers(len(archs), size=(n_boot, len(archs)))
    return percentile_ci(c[idx].sum(axis=1) / n[idx].sum(axis=1))


def calibration(p_hat: np.ndarray, won: np.ndarray) -> dict[str, Any]:
    """Brier, ECE and the reliability bins of predictions oriented to the predicted winner."""
    p, w = np.asarray(p_hat, dtype=np.float64), np.asarray(won, dtype=np.float64)
    if p.size == 0:
        raise ValueError("no pairs to calibrate on")
    if p.min() < 0.5 or p.max() > 1:
        raise ValueError("oriented probabilities must lie in [0.5, 1]")
    which = np.minimum(np.searchsorted(BIN_EDGES, p, side="right") - 1, len(BIN_EDGES) - 2)
    bins, ece = [], 0.0
    for b in range(len(BIN_EDGES) - 1):
        sel = which == b
        if not sel.any():
            bins.append(
                {"lo": BIN_EDGES[b], "hi": BIN_EDGES[b + 1], "n": 0, "mean_p": None, "win_rate": None}
            )
            continue
        mean_p, rate = float(p[sel].mean()), float(w[sel].mean())
        ece += sel.sum() / p.size * abs(mean_p - rate)
        bins.append(
            {
                "lo": BIN_EDGES[b],
                "hi": BIN_EDGES[b + 1],
                "n": int(sel.sum()),
                "mean_p": mean_p,
                "win_rate": rate,
            }
        )
    return {"brier": float(np.mean((p - w) ** 2)), "ece": float(ece), "bins": bins}


def load_frozen_rule(path: Path | str) -> dict[str, Any]:
    """The frozen rule, refused unless its bytes are the registered ones (the plan's sha256) and
    its features are the ones :mod:`core.backtest.freeze_rule` fits."""
    raw = Path(path).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != FROZEN_SHA256:
        raise ValueError(f"{path} is not the registered frozen rule (sha256 {digest})")
    rule = json.loads(raw)
    names = [f["name"] for f in rule["features"]]
    if names != [name for name, _, _ in FEATURES] or set(rule["coefficients"]) != set(names):
        raise ValueError(f"{path}: features {names} are not the frozen rule's")
    return dict(rule)


def frozen_beta(rule: Mapping[str, Any]) -> np.ndarray:
    return np.array([float(rule["coefficients"][name]) for name, _, _ in FEATURES])


def group_probabilities(rule: Mapping[str, Any], features: np.ndarray) -> np.ndarray:
    """P(i beats j) for every pair of one architecture × task group's recipes: ``features`` is
    (recipes, 4) in the rule's order (log already taken), z-scored within the group as when fitted."""
    z = standardise(np.asarray(features, dtype=np.float64))
    beta = frozen_beta(rule)
    return np.array(
        [[float(win_probability(beta, z[i], z[j])) for j in range(len(z))] for i in range(len(z))]
    )


def main_effects(
    y: np.ndarray, blocks: Sequence[str], design: np.ndarray, names: Sequence[str]
) -> dict[str, Any]:
    """Secondary: the recipe factors' main effects on recipe means, blocked by architecture.

    The additive model y = block + Σ_f β_f x_f (x_f ∈ {0, 1}) is fitted by least squares; each
    factor's effect is β_f (mean change when it is on) and its F test compares the full model with
    the model without that factor: F = ΔSS / (SS_res / df_res), df (1, df_res)."""
    y = np.asarray(y, dtype=np.float64)
    levels = sorted(set(blocks))
    dummies = np.array([[b == level for level in levels] for b in blocks], dtype=np.float64)
    full = np.hstack([dummies, np.asarray(design, dtype=np.float64)])
    df_res = len(y) - np.linalg.matrix_rank(full)
    if df_res < 1:
        raise ValueError("too few recipe means for the main-effects model")

    def rss(x: np.ndarray) -> tuple[float, np.ndarray]:
        coef = np.linalg.lstsq(x, y, rcond=None)[0]
        return float(np.sum((y - x @ coef) ** 2)), coef

    ss_full, coef = rss(full)
    out: dict[str, Any] = {"df_residual": int(df_res)}
    for k, name in enumerate(names):
        ss_reduced, _ = rss(np.delete(full, len(levels) + k, axis=1))
        f_stat = (ss_reduced - ss_full) / (ss_full / df_res) if ss_full > 0 else float("inf")
        out[name] = {
            "effect": float(coef[len(levels) + k]),
            "F": float(f_stat),
            "p": float(f_dist.sf(f_stat, 1, df_res)),
        }
    return out
