"""Back-test statistics: does a marker predict an OOD outcome across a zoo of models?

Pure functions over :class:`Record` s (a model's architecture, its measured OOD outcome and its marker
values), so the study, the ``backtest`` command and ``POST /v1/backtests`` share one implementation.

- Pearson r = Σ(x−x̄)(y−ȳ) / sqrt(Σ(x−x̄)² Σ(y−ȳ)²); Spearman ρ = Pearson r of the ranks (ties get
  their average rank): ``scipy.stats.pearsonr`` and ``scipy.stats.spearmanr``.
- Bootstrap 95% intervals: resample the (x, y) pairs with replacement B times, recompute the
  coefficient, take the 2.5% and 97.5% percentiles (resamples where x or y is constant are dropped).
- Pairwise test (the paper's v1/v2 verdict generalised to a zoo): over every pair of models of one
  architecture whose outcomes differ, a rule picks one model or abstains. A pick is a *win* when the
  picked model has the higher outcome. "Higher marker" picks the model with the higher value; the
  geometry rule picks the model whose D_eff AND Ψ_eff are both higher, and abstains when they disagree.
  Rates are fractions of all decidable pairs, so wins + losses + undecided = 1.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats
from scipy.stats import rankdata

MIN_MODELS = 3


@dataclass(frozen=True)
class Record:
    """One model: a label, its architecture (pairs are only formed within one), its measured
    outcome (e.g. OOD probe accuracy) and its marker values (``None`` where not applicable)."""

    model: str
    architecture: str
    outcome: float
    markers: Mapping[str, float | None]


@dataclass(frozen=True)
class Correlation:
    """Pearson r and Spearman ρ of one marker against the outcome, with bootstrap 95% intervals.

    Coefficients are ``None`` when undefined (fewer than ``MIN_MODELS`` models, or a constant input).
    """

    n: int
    pearson: float | None
    pearson_ci: tuple[float, float] | None
    spearman: float | None
    spearman_ci: tuple[float, float] | None


@dataclass(frozen=True)
class PairwiseRate:
    """How often a rule picked the model with the better outcome over ``pairs`` decidable pairs."""

    pairs: int
    wins: float
    losses: float
    undecided: float


@dataclass(frozen=True)
class MarkerBacktest:
    """One marker: pooled and per-architecture correlations, and its "pick higher" pairwise rate."""

    pooled: Correlation
    by_architecture: dict[str, Correlation]
    pairwise: PairwiseRate


@dataclass(frozen=True)
class Backtest:
    """Every marker's back-test, plus the geometry rule's pairwise rate when both of its markers exist."""

    n_models: int
    architectures: dict[str, int]
    markers: dict[str, MarkerBacktest]
    geometry_rule: PairwiseRate | None = None
    rule_markers: tuple[str, str] = ("dimension", "utilization")
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _as_vectors(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"x and y must be 1-d and of equal length, got shapes {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("x and y must be finite")
    return a, b


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise Pearson r of (B, n) arrays (``scipy.stats.pearsonr`` along the last axis); NaN where
    a row of either is constant. Rows are first divided by their largest magnitude (r is
    scale-invariant), so that no sum of squares overflows."""
    tiny = np.finfo(np.float64).tiny
    a = a / np.maximum(np.abs(a).max(axis=-1, keepdims=True), tiny)
    b = b / np.maximum(np.abs(b).max(axis=-1, keepdims=True), tiny)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (stats.ConstantInputWarning, stats.NearConstantInputWarning))
        return np.asarray(stats.pearsonr(a, b, axis=-1).statistic, dtype=np.float64)


def _defined(value: float) -> float | None:
    return None if math.isnan(value) else value


def pearson(x: ArrayLike, y: ArrayLike) -> float | None:
    """Pearson r (``scipy.stats.pearsonr``); ``None`` for fewer than two points or a constant input."""
    a, b = _as_vectors(x, y)
    if a.size < 2:
        return None
    return _defined(float(_pearson_rows(a, b)))


def spearman(x: ArrayLike, y: ArrayLike) -> float | None:
    """Spearman ρ (``scipy.stats.spearmanr``: Pearson r of average ranks); ``None`` for fewer than two
    points or a constant input."""
    a, b = _as_vectors(x, y)
    if a.size < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return _defined(float(stats.spearmanr(a, b).statistic))


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float] | None:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def correlate(
    x: ArrayLike, y: ArrayLike, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> Correlation:
    """Pearson and Spearman coefficients of ``x`` against ``y`` with percentile-bootstrap intervals.

    The resampling is ours rather than ``scipy.stats.bootstrap``'s: with a handful of models a resample
    of constant x or y is common, and scipy's percentile interval is NaN as soon as one resample's
    coefficient is; here such resamples are dropped. Each resample's coefficient is scipy's.
    """
    a, b = _as_vectors(x, y)
    if n_boot < 1 or not 0 < level < 1:
        raise ValueError(f"need n_boot >= 1 and 0 < level < 1, got {n_boot} and {level}")
    n = a.size
    if n < MIN_MODELS:
        return Correlation(n, None, None, None, None)
    r, rho = pearson(a, b), spearman(a, b)
    idx = np.random.default_rng(seed).integers(n, size=(n_boot, n))
    ra, rb = a[idx], b[idx]
    r_ci = _percentiles(_pearson_rows(ra, rb), level) if r is not None else None
    rho_ci = None
    if rho is not None:
        rho_ci = _percentiles(_pearson_rows(rankdata(ra, axis=1), rankdata(rb, axis=1)), level)
    return Correlation(n, r, r_ci, rho, rho_ci)


def _rate(outcomes: list[int], pairs: int) -> PairwiseRate:
    if pairs == 0:
        return PairwiseRate(0, 0.0, 0.0, 0.0)
    wins, losses = outcomes.count(1), outcomes.count(-1)
    return PairwiseRate(pairs, wins / pairs, losses / pairs, (pairs - wins - losses) / pairs)


def _pairs(records: Sequence[Record]) -> list[tuple[Record, Record]]:
    """Pairs of one architecture with different outcomes, ordered so the first transfers better."""
    out = []
    for first, second in itertools.combinations(records, 2):
        if first.architecture != second.architecture or first.outcome == second.outcome:
            continue
        out.append((first, second) if first.outcome > second.outcome else (second, first))
    return out


def _sign(better: float | None, worse: float | None) -> int:
    if better is None or worse is None or better == worse:
        return 0
    return 1 if better > worse else -1


def pairwise_higher(records: Sequence[Record], marker: str) -> PairwiseRate:
    """Rate of "pick the model with the higher ``marker``" (ties and missing values abstain)."""
    pairs = _pairs(records)
    verdicts = [_sign(good.markers.get(marker), bad.markers.get(marker)) for good, bad in pairs]
    return _rate(verdicts, len(pairs))


def pairwise_both_higher(records: Sequence[Record], first: str, second: str) -> PairwiseRate:
    """Rate of the geometry rule: pick the model where ``first`` and ``second`` are both higher."""
    pairs = _pairs(records)
    verdicts = []
    for good, bad in pairs:
        a = _sign(good.markers.get(first), bad.markers.get(first))
        b = _sign(good.markers.get(second), bad.markers.get(second))
        verdicts.append(a if a == b else 0)
    return _rate(verdicts, len(pairs))


def _values(records: Sequence[Record], marker: str) -> tuple[list[float], list[float]]:
    kept = [(r.markers.get(marker), r.outcome) for r in records]
    pairs = [(float(v), o) for v, o in kept if v is not None]
    return [v for v, _ in pairs], [o for _, o in pairs]


def validate_records(records: Sequence[Record]) -> None:
    """Raise ``ValueError`` on duplicate model labels or non-finite outcomes or marker values."""
    seen: set[str] = set()
    for record in records:
        if record.model in seen:
            raise ValueError(f"model {record.model!r} appears twice")
        seen.add(record.model)
        if not math.isfinite(record.outcome):
            raise ValueError(f"model {record.model!r}: the outcome must be finite, got {record.outcome}")
        for name, value in record.markers.items():
            if value is not None and not math.isfinite(value):
                raise ValueError(f"model {record.model!r}: marker {name!r} is not finite ({value})")


def backtest(
    records: Sequence[Record],
    markers: Sequence[str] | None = None,
    *,
    rule_markers: tuple[str, str] = ("dimension", "utilization"),
    n_boot: int = 2000,
    seed: int = 0,
) -> Backtest:
    """Back-test every marker (default: every name any record carries) against the outcome.

    Raises ``ValueError`` for fewer than ``MIN_MODELS`` records or invalid ones.
    """
    records = list(records)
    if len(records) < MIN_MODELS:
        raise ValueError(f"a back-test needs at least {MIN_MODELS} models, got {len(records)}")
    validate_records(records)
    names = list(markers) if markers is not None else sorted({n for r in records for n in r.markers})
    archs: dict[str, int] = {}
    for record in records:
        archs[record.architecture] = archs.get(record.architecture, 0) + 1
    results = {}
    for name in names:
        pooled = correlate(*_values(records, name), n_boot=n_boot, seed=seed)
        per_arch = {
            arch: correlate(
                *_values([r for r in records if r.architecture == arch], name), n_boot=n_boot, seed=seed
            )
            for arch in sorted(archs)
        }
        results[name] = MarkerBacktest(pooled, per_arch, pairwise_higher(records, name))
    notes = []
    rule = None
    if all(any(r.markers.get(m) is not None for r in records) for m in rule_markers):
        rule = pairwise_both_higher(records, *rule_markers)
    else:
        notes.append(f"geometry rule not evaluated: no values for {' and '.join(rule_markers)}")
    if not _pairs(records):
        notes.append("no pair of models shares an architecture with different outcomes: no pairwise test")
    return Backtest(len(records), archs, results, rule, rule_markers, notes)
