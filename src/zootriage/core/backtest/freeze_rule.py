"""The rule docs/study/PLAN-3.md freezes before its run: a pairwise win probability fitted on the
registered study's records only (``docs/study/2026-12-02/results.json``), then checked out of sample.

Why a fitted rule: the registered study's single markers picked the better-transferring recipe more
often than the two-marker rule, which abstained on half the pairs; a rule that says "a beats b with
probability p" can be checked for calibration on new architectures, where a bare pick cannot.

The rule, for two recipes a and b of one architecture on one task:

    P(a transfers better than b) = σ(βᵀ (z_a − z_b)),   σ(u) = 1 / (1 + e^(−u)),

- z = the recipe-mean features standardised within the architecture × task group (z-scores over the
  group's recipes, population SD; a constant feature gives 0), so that β is free of each
  architecture's scale: Ψ_eff and D_eff (centring ``none``), log numerical rank and ID accuracy;
- no intercept: swapping a and b gives 1 − P, as a win probability must;
- fitted on the noise-eligible pairs of the registered study's zoo (tasks A and B, the plan's
  exclusion rules and eligibility |Δy| > 1.96·sqrt(s_a²/k_a + s_b²/k_b)), by Newton's method on the
  logistic log-likelihood with a fixed ridge penalty ½·λ·‖β‖² (λ = 1, fixed in advance, so nothing is
  tuned on the data beyond β).

Run ``python -m zootriage.core.backtest.freeze_rule docs/study/2026-12-02/results.json
--out docs/study/plan3_frozen_rule.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zootriage.core.backtest.stats import NOISE_Z
from zootriage.core.backtest.tables import ID_ACCURACY, Model, kept, recipe_rows

CENTERING = "none"
OUTCOME = "probe"
# (feature name in the rule, record name, transform applied to the recipe mean before standardising)
FEATURES: tuple[tuple[str, str, str], ...] = (
    ("utilization", "utilization", "identity"),
    ("dimension", "dimension", "identity"),
    ("log_numerical_rank", "numerical_rank", "log"),
    ("id_accuracy", ID_ACCURACY, "identity"),
)
RIDGE = 1.0
FROZEN_PATH = "docs/study/plan3_frozen_rule.json"
FROZEN_SHA256 = "167c76d0fdafc2183947c57de5550a9109dc03ade004ac6a04d40fc840d517e0"
MAX_NEWTON = 100
TOLERANCE = 1e-10


@dataclass(frozen=True)
class Pairs:
    """Eligible pairs: feature differences z_a − z_b (n, f), whether a won (n,), and each pair's task."""

    diffs: np.ndarray
    a_won: np.ndarray
    tasks: list[str]


def standardise(values: np.ndarray) -> np.ndarray:
    """Column z-scores over the rows (population SD); a constant column becomes 0."""
    centred = values - values.mean(axis=0)
    sd = values.std(axis=0)
    return np.divide(centred, sd, out=np.zeros_like(centred), where=sd > 0)


def _transform(value: float, how: str) -> float:
    if how == "log":
        if value <= 0:
            raise ValueError(f"log transform of a non-positive value {value}")
        return float(np.log(value))
    return value


def eligible_pairs(models: Sequence[Model], task: str) -> Pairs:
    """The noise-eligible same-architecture recipe pairs of one task's zoo models (rules 1–3 applied)."""
    names = [record for _, record, _ in FEATURES]
    rows = recipe_rows(kept([m for m in models if m["task"] == task], CENTERING), CENTERING, names, [OUTCOME])
    by_arch: dict[str, list[Any]] = {}
    for row in rows:
        if all(row.means[n] is not None for n in names):
            by_arch.setdefault(row.arch, []).append(row)
    diffs, wins = [], []
    for arch in sorted(by_arch):
        group = by_arch[arch]
        if len(group) < 2:
            continue
        raw = np.array(
            [[_transform(float(r.means[rec]), how) for _, rec, how in FEATURES] for r in group],
            dtype=np.float64,
        )
        z = standardise(raw)
        y = np.array([float(r.means[OUTCOME]) for r in group])
        sd = np.array([r.sds[OUTCOME] for r in group])
        k = np.array([float(r.k) for r in group])
        i, j = np.triu_indices(len(group), k=1)
        gap = y[i] - y[j]
        noise = NOISE_Z * np.sqrt(sd[i] ** 2 / k[i] + sd[j] ** 2 / k[j])
        keep = np.abs(gap) > noise
        diffs.append(z[i[keep]] - z[j[keep]])
        wins.append(gap[keep] > 0)
    if not diffs:
        return Pairs(np.zeros((0, len(FEATURES))), np.zeros(0, dtype=bool), [])
    d = np.concatenate(diffs)
    return Pairs(d, np.concatenate(wins), [task] * len(d))


def fit(diffs: np.ndarray, a_won: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """β maximising Σ log σ(s·βᵀd) − ½·ridge·‖β‖² (s = +1 if a won, −1 otherwise), by Newton's method.

    The objective is strictly concave for ridge > 0, so Newton from β = 0 converges to the unique
    optimum; the loop stops when the step's largest entry is below ``TOLERANCE``."""
    if diffs.shape[0] == 0:
        raise ValueError("no eligible pairs to fit the rule on")
    if ridge <= 0:
        raise ValueError("the ridge penalty must be > 0")
    signed = diffs * np.where(a_won, 1.0, -1.0)[:, None]
    beta = np.zeros(diffs.shape[1])
    for _ in range(MAX_NEWTON):
        p = 1.0 / (1.0 + np.exp(-(signed @ beta)))  # probability of the observed winner
        grad = signed.T @ (1.0 - p) - ridge * beta
        hess = (signed * (p * (1.0 - p))[:, None]).T @ signed + ridge * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        beta = beta + step
        if np.max(np.abs(step)) < TOLERANCE:
            break
    return beta


def win_probability(beta: np.ndarray, z_a: np.ndarray, z_b: np.ndarray) -> np.ndarray:
    """P(a transfers better than b) = σ(βᵀ(z_a − z_b)); swapping a and b gives 1 − P."""
    return np.asarray(1.0 / (1.0 + np.exp(-((np.asarray(z_a) - np.asarray(z_b)) @ beta))))


def freeze(results: dict[str, Any], source: str, digest: str) -> dict[str, Any]:
    """The frozen rule's parameters and its in-sample fit over the zoo records of ``results``."""
    models = [m for m in results["models"] if m.get("arm") == "zoo"]
    per_task = [eligible_pairs(models, task) for task in ("A", "B")]
    diffs = np.concatenate([p.diffs for p in per_task])
    wins = np.concatenate([p.a_won for p in per_task])
    beta = fit(diffs, wins)
    prob = win_probability(beta, diffs, np.zeros_like(diffs))
    in_sample = {}
    for name, pairs in zip(("A", "B"), per_task, strict=True):
        if pairs.diffs.shape[0] == 0:
            continue
        q = win_probability(beta, pairs.diffs, np.zeros_like(pairs.diffs))
        in_sample[name] = {
            "pairs": int(pairs.diffs.shape[0]),
            "accuracy": float(np.mean((q > 0.5) == pairs.a_won)),
            "brier": float(np.mean((q - pairs.a_won) ** 2)),
        }
    return {
        "rule": "pairwise-logistic-1",
        "formula": "P(a beats b) = 1 / (1 + exp(-sum_f beta_f * (z_a,f - z_b,f)))",
        "features": [{"name": n, "record": r, "transform": t} for n, r, t in FEATURES],
        "standardisation": "z-score of the recipe means within each architecture x task group "
        "(population SD; a constant feature is 0)",
        "centering": CENTERING,
        "outcome": OUTCOME,
        "eligibility": f"|gap| > {NOISE_Z} * sqrt(s_a^2/k_a + s_b^2/k_b) over recipe seed means",
        "coefficients": {n: float(b) for (n, _, _), b in zip(FEATURES, beta, strict=True)},
        "ridge": RIDGE,
        "fitted_on": {"source": source, "sha256": digest, "arm": "zoo", "tasks": ["A", "B"]},
        "in_sample": {
            **in_sample,
            "all": {
                "pairs": int(diffs.shape[0]),
                "accuracy": float(np.mean((prob > 0.5) == wins)),
                "brier": float(np.mean((prob - wins) ** 2)),
            },
        },
        "command": f"python -m zootriage.core.backtest.freeze_rule {source} --out {FROZEN_PATH}",
    }


def load_frozen_rule(path: Path | str) -> dict[str, Any]:
    """The frozen rule, refused unless its bytes are the registered ones (the plan's sha256) and
    its features are the ones this module fits."""
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="the registered study's results.json")
    parser.add_argument("--out", help="write the frozen rule here (JSON); printed when omitted")
    args = parser.parse_args(argv)
    path = Path(args.results)
    try:
        raw = path.read_bytes()
        results = json.loads(raw)
        if not isinstance(results, dict) or not isinstance(results.get("models"), list):
            raise ValueError("it holds no list of model records under 'models'")
        frozen = freeze(results, args.results, hashlib.sha256(raw).hexdigest())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: cannot freeze the rule from {path}: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(frozen, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
